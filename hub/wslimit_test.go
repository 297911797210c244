package hub_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestRelayedWebsocketRefusesAnOversizedMessage (issue 26, finding 6, hub
// side): a client's message over the hub's bound, sent on a watch relayed
// to a controller, is not relayed: the client is told 1009 (message too
// big) and its watch ends; the hub goes on serving watches.
func TestRelayedWebsocketRefusesAnOversizedMessage(t *testing.T) {
	f := newProxyFixture(t)
	tok := f.token(f.rita, 5*time.Minute, "")
	watch := func() *websocket.Conn {
		t.Helper()
		return f.openWatch(t, t.Context(), tok)
	}
	conn := watch()
	if err := conn.WriteMessage(websocket.BinaryMessage, make([]byte, 1<<20)); err != nil {
		t.Fatalf("write: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var err error
	for err == nil {
		_, _, err = conn.ReadMessage()
	}
	if ce := (*websocket.CloseError)(nil); !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("the watch did not end with 1009 after a 1 MiB message: %v", err)
	}
	// The hub is healthy: another watch opens and a plain call answers.
	watch()
	if code, b := f.do("GET", "/v1/models/"+f.model+"/status", tok, nil); code != http.StatusOK {
		t.Fatalf("status after the refused message: %d %s", code, b)
	}
}
