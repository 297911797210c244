package apiserver

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// DefaultLogBytes bounds a model's debug-log records on a node in bytes
// (recordSize), whatever their count: an agent may log lines of any
// length, and the oldest records give way to keep the ring under it.
const DefaultLogBytes = 8 << 20

// maxLogMessage bounds one record's message and maxLogField its entity,
// level and module; longer text is cut on a character boundary and ends
// with logTruncated. One record is thus a small part of DefaultLogBytes.
const (
	maxLogMessage = 64 << 10
	maxLogField   = 256
	logTruncated  = "… [truncated]"
)

// logRecordOverhead is what a record costs beyond its text: its sequence
// number, time and the slice and string headers.
const logRecordOverhead = 64

// recordSize is what a record counts against DefaultLogBytes.
func recordSize(r api.LogRecord) int {
	return logRecordOverhead + len(r.Entity) + len(r.Level) + len(r.Module) + len(r.Message)
}

// boundRecord cuts a record's text to maxLogMessage and maxLogField.
func boundRecord(r api.LogRecord) api.LogRecord {
	r.Entity = truncateText(r.Entity, maxLogField)
	r.Level = truncateText(r.Level, maxLogField)
	r.Module = truncateText(r.Module, maxLogField)
	r.Message = truncateText(r.Message, maxLogMessage)
	return r
}

// truncateText is s if it fits in max bytes, else its start cut on a
// UTF-8 character boundary and ended with logTruncated, max bytes in all.
func truncateText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(logTruncated)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + logTruncated
}

// logBook is the per-model ring buffers of debug-log records of this node.
type logBook struct {
	max      int // records a model keeps
	maxBytes int // bytes (recordSize) a model keeps
	// mu guards the fields below.
	mu     sync.Mutex
	seq    uint64
	models map[string][]api.LogRecord // oldest first, within max and maxBytes
	sizes  map[string]int             // each model's recordSize total
	notify chan struct{}              // closed and replaced on append
	disk   *logFiles                  // nil: memory only
}

// newLogBook keeps max records and DefaultLogBytes per model, also in dir
// unless it is "", starting from what dir holds (sequence numbers continue
// after every number handed out before, even one whose record never
// reached dir).
func newLogBook(max int, dir string, log *slog.Logger) *logBook {
	b := &logBook{max: max, maxBytes: DefaultLogBytes, models: map[string][]api.LogRecord{},
		sizes: map[string]int{}, notify: make(chan struct{})}
	if dir == "" {
		return b
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		log.Warn("debug-log kept in memory only", "dir", dir, "err", err)
		return b
	}
	b.disk = &logFiles{dir: dir, log: log, files: map[string]*logFile{}}
	b.models, b.seq = b.disk.load(max, b.maxBytes)
	for model, ring := range b.models {
		for _, r := range ring {
			b.sizes[model] += recordSize(r)
		}
	}
	return b
}

// keepNewest is how many of ring's oldest records to drop so that at most
// max records and maxBytes bytes remain, and the bytes that remain; size
// is ring's total. The newest record always stays.
func keepNewest(ring []api.LogRecord, size, max, maxBytes int) (drop, remain int) {
	for drop < len(ring)-1 && (len(ring)-drop > max || size > maxBytes) {
		size -= recordSize(ring[drop])
		drop++
	}
	return drop, size
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
	b.appendLocked(model, rec)
	close(b.notify)
	b.notify = make(chan struct{})
}

// logKey is what makes two records the same one when a migration
// transfers them: who logged what, when.
type logKey struct {
	entity, message string
	time            int64
}

func keyOf(r api.LogRecord) logKey {
	return logKey{entity: r.Entity, message: r.Message, time: r.Time.UnixNano()}
}

// appendNew appends the records of recs the model's ring does not hold
// yet (the same entity, time and message, once bounded), in order, and
// returns how many it appended: a transfer sent again adds nothing.
func (b *logBook) appendNew(model string, recs []api.LogRecord) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	held := map[logKey]bool{}
	for _, r := range b.models[model] {
		held[keyOf(r)] = true
	}
	n := 0
	for _, rec := range recs {
		rec = boundRecord(rec)
		if k := keyOf(rec); !held[k] {
			held[k] = true
			b.appendLocked(model, rec)
			n++
		}
	}
	if n > 0 {
		close(b.notify)
		b.notify = make(chan struct{})
	}
	return n
}

// appendLocked appends one record with the next sequence number; the
// caller wakes the followers.
func (b *logBook) appendLocked(model string, rec api.LogRecord) {
	b.seq++
	if b.disk != nil {
		b.disk.reserve(b.seq) // before anyone sees the number
	}
	rec = boundRecord(rec)
	rec.Seq = b.seq
	ring := append(b.models[model], rec)
	drop, size := keepNewest(ring, b.sizes[model]+recordSize(rec), b.max, b.maxBytes)
	if drop > 0 {
		ring = append(ring[:0:0], ring[drop:]...)
	}
	b.models[model], b.sizes[model] = ring, size
	if b.disk != nil {
		b.disk.append(model, rec, ring, b.max, b.maxBytes)
	}
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
