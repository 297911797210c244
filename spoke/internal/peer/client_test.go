package peer

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestCallNotDelivered: a node that cannot be dialled gives a
// *NotDeliveredError (the caller may retry anywhere); an answer with an
// error code gives that *api.Error.
func TestCallNotDelivered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := NewClient(nil, nil)
	err = c.Call(t.Context(), addr, PathReadIndex, nil, new(ReadIndexResponse))
	var nd *NotDeliveredError
	if !errors.As(err, &nd) {
		t.Fatalf("dialling a closed port: %v, want a *NotDeliveredError", err)
	}

	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMisdirectedRequest)
		w.Write([]byte(`{"code":"not-raft-leader","message":"this node is not the raft leader"}`))
	}))
	defer srv.Close()
	c = &Client{hc: srv.Client()}
	_, err = c.Apply(t.Context(), srv.Listener.Addr().String(), []byte("{}"))
	var e *api.Error
	if !errors.As(err, &e) || e.Code != CodeNotRaftLeader {
		t.Fatalf("a not-leader answer: %v", err)
	}
}
