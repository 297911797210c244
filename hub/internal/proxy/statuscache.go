package proxy

import (
	"container/list"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/corkconn"
)

// The proxy keeps the last status it relayed of each model, with the
// controller's ETag, and asks the controller with If-None-Match on every
// later read of that status, by anyone allowed to read it. A controller
// whose model has not changed since (its status revision, the leases the
// copy shows held: spoke/internal/apiserver/statustag.go) answers 304
// without building the status, and the hub sends its copy with the index
// and time of the 304. A read through the hub therefore always reaches the
// controller and always gets what the controller holds at that moment:
// nothing is served stale, only not built again. A status is the same for
// every reader of a model, and the caller was authorized (as for any
// proxied read) before the copy is used.
//
// What it saves: the controller's work for a status (most of a status
// call: bench/README.md) and the bytes of the answer across the hub's link
// to the controller, on every poll of every dashboard and script.
//
// A caller's own conditional request, or one with Cache-Control: no-store,
// is relayed as it is, and its answer is not kept.

// maxStatusCopy bounds one kept status; a larger one is relayed, not kept.
const maxStatusCopy = 4 << 20

// statusKey names a kept status: the controller it came from (the model
// may move) and the model.
type statusKey struct{ controller, model string }

// statusCopy is one kept status answer.
type statusCopy struct {
	key    statusKey
	tag    string      // the controller's ETag
	header http.Header // what the hub relays of its headers, but Date and Content-Length
	body   []byte
	// index and stamp are the spans of the status's "index" value and of
	// its controller timestamp (quotes included) in body.
	index, stamp span
}

type span struct{ start, end int }

func (c *statusCopy) size() int64 { return int64(len(c.body)) + 512 }

// statusCache holds the kept statuses, the least recently used dropped
// first past its byte limit.
type statusCache struct {
	limit int64
	mu    sync.Mutex
	size  int64
	lru   list.List // *statusCopy, most recently used first
	byKey map[statusKey]*list.Element
	// revalidated counts reads answered from a copy after a 304; kept,
	// the answers kept (drover_hub_status_revalidated_total,
	// drover_hub_status_kept_total).
	revalidated, kept atomic.Int64
}

func newStatusCache(limit int64) *statusCache {
	return &statusCache{limit: limit, byKey: map[statusKey]*list.Element{}}
}

func (c *statusCache) get(k statusKey) *statusCopy {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byKey[k]
	if e == nil {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*statusCopy)
}

func (c *statusCache) put(cp *statusCopy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(cp.key)
	c.byKey[cp.key] = c.lru.PushFront(cp)
	c.size += cp.size()
	for c.size > c.limit {
		c.dropLocked(c.lru.Back().Value.(*statusCopy).key)
	}
	c.kept.Add(1)
}

func (c *statusCache) drop(k statusKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(k)
}

func (c *statusCache) dropLocked(k statusKey) {
	if e := c.byKey[k]; e != nil {
		c.size -= e.Value.(*statusCopy).size()
		c.lru.Remove(e)
		delete(c.byKey, k)
	}
}

// counter reads one of c's figures; 0 when no status is kept.
func (c *statusCache) counter(f func(*statusCache) int64) int64 {
	if c == nil {
		return 0
	}
	return f(c)
}

// bytes is what the kept statuses hold (drover_hub_status_kept_bytes).
func (c *statusCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// conditionalHeaders make a request the caller's own conditional one.
var conditionalHeaders = []string{"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"}

// statusCacheKey reports whether r, proxied to controller, is a read of a
// model's status the proxy may answer from a revalidated copy: a GET of
// /v1/models/{uuid}/status, its query at most index and consistent
// (which say how current the answer must be, not what it is), not
// conditional itself, not no-store.
func (s *Relay) statusCacheKey(r *http.Request, controller string) (statusKey, bool) {
	if s.statuses == nil || r.Method != http.MethodGet {
		return statusKey{}, false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/models/")
	if !ok {
		return statusKey{}, false
	}
	model, ok := strings.CutSuffix(rest, "/status")
	if !ok || model == "" || strings.Contains(model, "/") {
		return statusKey{}, false
	}
	if r.URL.RawQuery != "" {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return statusKey{}, false
		}
		for k := range q {
			if k != "index" && k != "consistent" {
				return statusKey{}, false
			}
		}
	}
	for _, h := range conditionalHeaders {
		if len(r.Header[h]) > 0 {
			return statusKey{}, false
		}
	}
	for _, v := range r.Header["Cache-Control"] {
		if strings.Contains(strings.ToLower(v), "no-store") {
			return statusKey{}, false
		}
	}
	return statusKey{controller: controller, model: model}, true
}

// forwardStatus proxies r, a read of key's status, revalidating the kept
// copy if there is one, and keeps the controller's answer when it is a
// new status. An error means nothing was written: no node answered.
func (s *Relay) forwardStatus(w http.ResponseWriter, r *http.Request, key statusKey, sc *Client, tok string) error {
	cp := s.statuses.get(key)
	cond := ""
	if cp != nil {
		cond = cp.tag
	}
	resp, c, stop, err := sc.roundTripDirect(r, tok, cond)
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		s.controllerRefused(w, key.controller, resp, c, stop)
	case resp.StatusCode == http.StatusNotModified && cp != nil:
		resp.Body.Close()
		if stop() && !resp.Close {
			sc.pool.put(c)
		} else {
			c.conn.Close()
		}
		s.statuses.revalidated.Add(1)
		cp.serve(w, r, resp.Header)
	case resp.StatusCode == http.StatusOK && len(resp.Header["Etag"]) == 1 &&
		resp.ContentLength >= 0 && resp.ContentLength <= maxStatusCopy:
		body := make([]byte, resp.ContentLength)
		_, rerr := io.ReadFull(resp.Body, body)
		resp.Body.Close()
		if stop() && rerr == nil && !resp.Close {
			sc.pool.put(c)
		} else {
			c.conn.Close()
		}
		if rerr != nil { // broke off after its head: abort ours, as copyAnswer does
			s.statuses.drop(key)
			panic(http.ErrAbortHandler)
		}
		if kept := newStatusCopy(key, resp, body); kept != nil {
			s.statuses.put(kept)
		} else {
			s.statuses.drop(key)
		}
		h := w.Header()
		copyAnswerHeaders(h, resp.Header)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		defer corkconn.Hold(corkconn.FromContext(r.Context(), r.ProtoMajor), w, int64(len(body)))()
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body) // the caller may have gone; nothing to do
	default:
		if cp != nil {
			s.statuses.drop(key)
		}
		copyAnswer(w, r, resp, c, stop, sc)
	}
	return nil
}

// maxStatusTag bounds a kept ETag: the hub sends it back as it came.
const maxStatusTag = 256

// newStatusCopy keeps a controller's status answer, or returns nil when
// its body is not a status whose index and timestamp can be found, or its
// ETag is not one the hub may send back (a controller an organization
// registered is not trusted to write the hub's requests).
func newStatusCopy(key statusKey, resp *http.Response, body []byte) *statusCopy {
	tag := resp.Header.Get("ETag")
	if tag == "" || len(tag) > maxStatusTag || !httpguts.ValidHeaderFieldValue(tag) {
		return nil
	}
	index, stamp, ok := statusStamps(body)
	if !ok {
		return nil
	}
	cp := &statusCopy{key: key, tag: tag, header: http.Header{}, body: body, index: index, stamp: stamp}
	copyAnswerHeaders(cp.header, resp.Header)
	delete(cp.header, "Date")
	delete(cp.header, "Content-Length")
	return cp
}

// statusTimeFormat is the status's controller timestamp (the controller's
// timestampFormat).
const statusTimeFormat = "15:04:05Z07:00"

// serve answers with the copy, as the controller would have at the time
// and index of its 304 (whose headers are notModified).
func (cp *statusCopy) serve(w http.ResponseWriter, r *http.Request, notModified http.Header) {
	index := cp.body[cp.index.start:cp.index.end]
	if v := notModified.Get(api.HeaderIndex); v != "" && allDigits(v) {
		index = []byte(v)
	}
	at := time.Now()
	if d, err := http.ParseTime(notModified.Get("Date")); err == nil {
		at = d
	}
	stamp := []byte(`"` + at.UTC().Format(statusTimeFormat) + `"`)
	h := w.Header()
	for k, v := range cp.header {
		h[k] = v // never changed in place: Set replaces the slice
	}
	if v := notModified.Get(api.HeaderIndex); v != "" {
		h.Set(api.HeaderIndex, v)
	}
	if v := notModified.Get("Date"); v != "" {
		h.Set("Date", v)
	}
	first, second, a, b := cp.index, cp.stamp, index, stamp
	if cp.stamp.start < cp.index.start {
		first, second, a, b = cp.stamp, cp.index, stamp, index
	}
	parts := [5][]byte{cp.body[:first.start], a, cp.body[first.end:second.start], b, cp.body[second.end:]}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	h.Set("Content-Length", strconv.Itoa(n))
	defer corkconn.Hold(corkconn.FromContext(r.Context(), r.ProtoMajor), w, int64(n))()
	w.WriteHeader(http.StatusOK)
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return // the caller went away
		}
	}
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
