package cli

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
)

// TestDestroyWaitEndsWithTheModel: waiting for a destroyed model ends
// when the watch carries the model's removal, even while the model is
// still listed (a hub's index a moment behind its controller) and no
// frame follows; it used to wait for its whole --timeout.
func TestDestroyWaitEndsWithTheModel(t *testing.T) {
	const uuid = "6a1f0c2e-0000-4000-8000-000000000001"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+uuid, func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Model{UUID: uuid, Name: "m", Life: api.Dying})
	})
	mux.HandleFunc("GET /v1/models/"+uuid+"/status", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.FullStatus{Machines: map[string]api.MachineStatus{"0": {}}})
	})
	mux.HandleFunc("GET /v1/models/"+uuid+"/watch", func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.WriteJSON(api.WatchFrame{Type: api.FrameReset, Index: 4, Status: &api.FullStatus{}})
		_ = c.WriteJSON(api.WatchFrame{Type: api.FrameDelta, Index: 5, Deltas: []api.WatchDelta{
			{Kind: "machine", Key: "0", Op: "delete"}, {Kind: "model", Key: uuid, Op: "delete"}}})
		_, _, _ = c.ReadMessage() // then nothing more, until the client goes
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cl, err := api.NewClient(api.ClientConfig{Addresses: []string{strings.TrimPrefix(srv.URL, "https://")}, CACert: ca,
		User: "admin", Password: "x", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	a, _, _ := testApp(t)
	mc := &modelConn{conn: &conn{name: "c", details: &ControllerDetails{}, account: &Account{}, client: cl}, model: "m", uuid: uuid}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var left modelLeft
	if err := a.waitModelGone(ctx, mc, a.newProgress("destroying"), &left); err != nil {
		t.Fatalf("waiting for a model whose removal the watch carried: %v (left: %s)", err, left)
	}
}
