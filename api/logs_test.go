package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// logNode serves a log stream that breaks off after two records on its
// first connection, and reports each connection's since.
func logNode(t *testing.T, sinces chan<- uint64) http.Handler {
	mux := http.NewServeMux()
	var used atomic.Bool
	mux.HandleFunc("GET /v1/models/{model}/logs", func(w http.ResponseWriter, r *http.Request) {
		since, err := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
		if err != nil || r.URL.Query().Get("follow") != "true" {
			http.Error(w, `{"code":"bad-request","message":"since/follow"}`, http.StatusBadRequest)
			return
		}
		sinces <- since
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		if !used.Swap(true) {
			for seq := since + 1; seq <= since+2; seq++ {
				_ = enc.Encode(api.LogRecord{Seq: seq, Entity: "unit-kv-0", Level: "INFO", Message: "line " + strconv.FormatUint(seq, 10)})
			}
			w.(http.Flusher).Flush()
			// Drop the connection mid-stream, as a dying node would.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		_ = enc.Encode(api.LogRecord{Seq: since + 1, Entity: "unit-kv-0", Level: "INFO", Message: "after resume"})
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	return mux
}

func TestLogStreamResumesAfterDrop(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	sinces := make(chan uint64, 4)
	srv := ca.serve(t, logNode(t, sinces))
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})

	s, err := c.Model(model).Logs(t.Context(), api.LogsRequest{Since: 10, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	for range 3 {
		rec, err := s.Next(t.Context())
		if err != nil {
			t.Fatalf("next after %v: %v", got, err)
		}
		got = append(got, rec.Message)
	}
	if got[0] != "line 11" || got[1] != "line 12" || got[2] != "after resume" {
		t.Fatalf("records %q", got)
	}
	if s1, s2 := <-sinces, <-sinces; s1 != 10 || s2 != 12 {
		t.Fatalf("connections asked since=%d then since=%d, want 10 then 12", s1, s2)
	}
	if s.Seq() != 13 {
		t.Fatalf("seq %d, want 13", s.Seq())
	}
}

func TestLogsUnsupportedByOldController(t *testing.T) {
	ca := newTestCA(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/{model}", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Model{UUID: r.PathValue("model"), Name: "demo"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"code":"not-found","message":"no route"}`, http.StatusNotFound)
	})
	srv := ca.serve(t, mux)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	_, err := c.Model(model).Logs(t.Context(), api.LogsRequest{})
	if !errors.Is(err, api.ErrLogsUnsupported) {
		t.Fatalf("logs on an old controller: %v", err)
	}
}

func TestLogStreamEndsWithoutFollow(t *testing.T) {
	ca := newTestCA(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/{model}/logs", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(api.LogRecord{Seq: 1, Message: "only"})
	})
	srv := ca.serve(t, mux)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	s, err := c.Model(model).Logs(t.Context(), api.LogsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec, err := s.Next(t.Context()); err != nil || rec.Message != "only" {
		t.Fatalf("first: %v %v", rec, err)
	}
	if _, err := s.Next(t.Context()); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last record: %v", err)
	}
}

// TestLogStreamSaysOutage: a followed log that cannot be resumed because
// no controller is available tells its owner once, and again when it has
// resumed.
func TestLogStreamSaysOutage(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/{model}/logs", func(w http.ResponseWriter, r *http.Request) {
		since, _ := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
		switch calls.Add(1) {
		case 1: // one record, then the controller goes away
			w.Header().Set("Content-Type", "application/x-ndjson")
			_ = json.NewEncoder(w).Encode(api.LogRecord{Seq: since + 1, Entity: "unit-kv-0", Level: "INFO", Message: "before"})
			w.(http.Flusher).Flush()
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
		case 2, 3:
			http.Error(w, `{"code":"unavailable","message":"no raft leader"}`, http.StatusServiceUnavailable)
		default:
			w.Header().Set("Content-Type", "application/x-ndjson")
			_ = json.NewEncoder(w).Encode(api.LogRecord{Seq: since + 1, Entity: "unit-kv-0", Level: "INFO", Message: "after"})
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	})
	srv := ca.serve(t, mux)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	s, err := c.Model(model).Logs(t.Context(), api.LogsRequest{Since: 1, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var told []string
	s.OnOutage(func(err error) { told = append(told, fmt.Sprint(err)) })
	for _, want := range []string{"before", "after"} {
		rec, err := s.Next(t.Context())
		if err != nil || rec.Message != want {
			t.Fatalf("record %+v %v, want %q", rec, err, want)
		}
	}
	if len(told) != 2 || !strings.Contains(told[0], "no raft leader") || told[1] != "<nil>" {
		t.Errorf("outage told %q, want the refusal once, then nil", told)
	}
}
