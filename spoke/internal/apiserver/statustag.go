package apiserver

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
)

// A status answer carries an ETag, and a GET of the status with that tag
// in If-None-Match is answered 304 Not Modified, without building the
// status, while the model's status revision (state.StatusRevision) and
// the store it was read from are the same and no lease it shows held has
// run out. The hub revalidates its copy of a model's status this way on
// every read (hub/statuscache.go); any client may.
//
// The tag is weak: a 304's status differs from the copy's in its index
// and timestamp, which the 304's X-Drover-Index and Date give.

// statusTag is what a status answer's ETag says.
type statusTag struct {
	epoch string // the server's: a revision is this store's, and this binary's status
	gen   uint64 // the store's restores (Snapshot.Generation)
	rev   uint64 // the model's status revision
	until int64  // Unix nanoseconds until which its leases stay as shown; 0: none held
}

func (t statusTag) String() string {
	return `W/"` + t.epoch + "." + strconv.FormatUint(t.gen, 10) + "." + strconv.FormatUint(t.rev, 10) +
		"." + strconv.FormatInt(t.until, 10) + `"`
}

// newEpoch names one server's lifetime in its status tags.
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// notModified returns the first of the entity tags in the If-None-Match
// header values hs that this server gave for the status cur describes and
// that is still true at now. Anything else, "*" included, is no match:
// the status is built and sent.
func notModified(hs []string, cur statusTag, now time.Time) (string, bool) {
	for _, h := range hs {
		for v := range strings.SplitSeq(h, ",") {
			v = strings.TrimSpace(v)
			if t, ok := parseStatusTag(v); ok && t.epoch == cur.epoch &&
				t.gen == cur.gen && t.rev == cur.rev && (t.until == 0 || now.UnixNano() < t.until) {
				return v, true
			}
		}
	}
	return "", false
}

// parseStatusTag reads an entity tag as statusTag.String writes it (weak
// or not: If-None-Match compares weakly).
func parseStatusTag(v string) (statusTag, bool) {
	v = strings.TrimPrefix(v, "W/")
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return statusTag{}, false
	}
	parts := strings.Split(v[1:len(v)-1], ".")
	if len(parts) != 4 || parts[0] == "" {
		return statusTag{}, false
	}
	gen, err1 := strconv.ParseUint(parts[1], 10, 64)
	rev, err2 := strconv.ParseUint(parts[2], 10, 64)
	until, err3 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return statusTag{}, false
	}
	return statusTag{epoch: parts[0], gen: gen, rev: rev, until: until}, true
}

// writeNotModified answers a revalidated status: its tag, and the index
// the answer is current at.
func writeNotModified(w http.ResponseWriter, tag string, index uint64) {
	h := w.Header()
	h.Set("ETag", tag)
	h.Set(api.HeaderIndex, strconv.FormatUint(index, 10))
	w.WriteHeader(http.StatusNotModified)
}
