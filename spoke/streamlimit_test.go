package spoke

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
)

// TestStreamsRefuseOversizedClientFrames (issue 26, finding 6): a client
// that sends a frame larger than any it legitimately sends on a watch or
// on the event stream is cut off with close code 1009 (message too big),
// from the frame's header, before its payload is read into memory; the
// node keeps serving.
func TestStreamsRefuseOversizedClientFrames(t *testing.T) {
	c := newTestClusterWith(t, 1, func(cfg *Config) { cfg.KeepaliveInterval = 200 * time.Millisecond })
	admin := c.client(0)
	ctx := t.Context()
	m, err := admin.AddModel(ctx, api.AddModelRequest{Name: "limits"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/models/" + m.UUID + "/watch?since=0", "/v1/events?since=0"} {
		t.Run(path, func(t *testing.T) {
			ws := dialStream(t, c, 0, path)
			if _, _, err := ws.ReadMessage(); err != nil {
				t.Fatalf("first frame: %v", err)
			}
			big := bytes.Repeat([]byte("x"), 256<<10)
			// The server answers with a close frame; until then it may
			// have sent frames of its own (keepalives), which are read
			// past. An open stream after several keepalives fails. A
			// write cut short by the server closing counts as cut off.
			werr := ws.WriteMessage(websocket.TextMessage, big)
			ws.SetReadDeadline(time.Now().Add(20 * time.Second))
			for frames := 0; werr == nil; frames++ {
				_, _, err := ws.ReadMessage()
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					if ce.Code != websocket.CloseMessageTooBig {
						t.Fatalf("closed with code %d, want %d", ce.Code, websocket.CloseMessageTooBig)
					}
					break
				}
				if err != nil {
					t.Fatalf("want a close frame with code %d, got %v", websocket.CloseMessageTooBig, err)
				}
				if frames > 10 {
					t.Fatalf("the stream still serves after a %d-byte client frame (%d frames since)", len(big), frames)
				}
			}
			// The node is healthy: a new stream and an API call work.
			ws2 := dialStream(t, c, 0, path)
			if _, _, err := ws2.ReadMessage(); err != nil {
				t.Fatalf("a new stream: %v", err)
			}
			if _, err := admin.WhoAmI(ctx); err != nil {
				t.Fatalf("the node after the oversized frame: %v", err)
			}
		})
	}
}
