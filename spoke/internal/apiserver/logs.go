package apiserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/droverhq/drover/api"
)

// DefaultLogLines is how many debug-log records a node keeps per model.
//
// Logs are kept per controller node, in memory, not replicated through
// raft: an agent's lines live on the node it is connected to, and a
// debug-log client sees the lines of the node it asks. Replicating every
// hook's output through the raft log would make logging as expensive as a
// model change; Juju too keeps logs outside its replicated model store.
const DefaultLogLines = 5000

// logBook is the per-model ring buffers of debug-log records of this node.
type logBook struct {
	max int
	// mu guards the fields below.
	mu     sync.Mutex
	seq    uint64
	models map[string][]api.LogRecord // oldest first, at most max
	notify chan struct{}              // closed and replaced on append
}

func newLogBook(max int) *logBook {
	return &logBook{max: max, models: map[string][]api.LogRecord{}, notify: make(chan struct{})}
}

func (b *logBook) append(model string, rec api.LogRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	rec.Seq = b.seq
	ring := append(b.models[model], rec)
	if len(ring) > b.max {
		ring = append(ring[:0:0], ring[len(ring)-b.max:]...)
	}
	b.models[model] = ring
	close(b.notify)
	b.notify = make(chan struct{})
}

// since returns the model's records after seq, and the channel that is
// closed when more arrive.
func (b *logBook) since(model string, seq uint64) ([]api.LogRecord, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []api.LogRecord
	for _, r := range b.models[model] {
		if r.Seq > seq {
			out = append(out, r)
		}
	}
	return out, b.notify
}

// getLogs serves GET /v1/models/{model}/logs?since=SEQ&follow=true as
// newline-delimited JSON api.LogRecord values; with follow it keeps the
// response open and streams new records as they arrive.
func (s *Server) getLogs(w http.ResponseWriter, r *http.Request) {
	model := modelOf(r)
	if _, err := lookupModel(s.b.Store().Snapshot(), model); err != nil {
		writeError(w, r, err)
		return
	}
	var since uint64
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, r, badParam("since", v, "want a log sequence number"))
			return
		}
		since = n
	}
	follow, ok := boolParam(w, r, "follow")
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for {
		recs, more := s.logs.since(model, since)
		for _, rec := range recs {
			if err := enc.Encode(rec); err != nil {
				return
			}
			since = rec.Seq
		}
		if flusher != nil {
			flusher.Flush()
		}
		if !follow {
			return
		}
		select {
		case <-more:
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// unitTagOf is "unit-app-N" for "app/N".
func unitTagOf(unit string) string { return "unit-" + strings.ReplaceAll(unit, "/", "-") }
