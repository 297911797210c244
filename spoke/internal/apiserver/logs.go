package apiserver

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
)

// DefaultLogLines is how many debug-log records a node keeps per model.
//
// Logs are kept per controller node, not replicated through raft: an
// agent's lines live on the node it is connected to, and a debug-log client
// sees the lines of the node it asks. Replicating every hook's output
// through the raft log would make logging as expensive as a model change;
// Juju too keeps logs outside its replicated model store. With a data
// directory (Config.LogDir) they are also written to disk and read back
// when the node starts (logfiles.go).
const DefaultLogLines = 5000

// logBook is the per-model ring buffers of debug-log records of this node.
type logBook struct {
	max int
	// mu guards the fields below.
	mu     sync.Mutex
	seq    uint64
	models map[string][]api.LogRecord // oldest first, at most max
	notify chan struct{}              // closed and replaced on append
	disk   *logFiles                  // nil: memory only
}

// newLogBook keeps max records per model, also in dir unless it is "",
// starting from what dir holds (sequence numbers continue after every
// number handed out before, even one whose record never reached dir).
func newLogBook(max int, dir string, log *slog.Logger) *logBook {
	b := &logBook{max: max, models: map[string][]api.LogRecord{}, notify: make(chan struct{})}
	if dir == "" {
		return b
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		log.Warn("debug-log kept in memory only", "dir", dir, "err", err)
		return b
	}
	b.disk = &logFiles{dir: dir, log: log, files: map[string]*logFile{}}
	b.models, b.seq = b.disk.load(max)
	return b
}

func (b *logBook) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.disk != nil {
		b.disk.close()
	}
}

func (b *logBook) append(model string, rec api.LogRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	if b.disk != nil {
		b.disk.reserve(b.seq) // before anyone sees the number
	}
	rec.Seq = b.seq
	ring := append(b.models[model], rec)
	if len(ring) > b.max {
		ring = append(ring[:0:0], ring[len(ring)-b.max:]...)
	}
	b.models[model] = ring
	if b.disk != nil {
		b.disk.append(model, rec, ring, b.max)
	}
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
func (s *logEndpoint) getLogs(w http.ResponseWriter, r *http.Request) {
	model := modelOf(r)
	if _, err := lookup.Model(s.b.Store().Snapshot(), model); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	since, err := reply.UintParam(r, "since", "want a log sequence number")
	if err != nil {
		reply.WriteError(w, r, err)
		return
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
	var recheck <-chan time.Time // a hub's follow looks at the trust now and then
	if follow && callerOf(r.Context()).Hub {
		t := time.NewTicker(s.keepaliveInterval())
		defer t.Stop()
		recheck = t.C
	}
	for {
		recs, more := s.book.since(model, since)
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
		case <-recheck:
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
		if s.hubTrustEnded(r.Context()) != nil {
			return
		}
	}
}

// unitTagOf is "unit-app-N" for "app/N".
func unitTagOf(unit string) string { return "unit-" + strings.ReplaceAll(unit, "/", "-") }
