package status

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/version"
	"github.com/droverhq/drover/spoke/internal/state"
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

// NewEpoch names one server's lifetime in its status tags.
func NewEpoch() string {
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

// Answer builds model's status from snap and returns it with its ETag,
// or returns nil and the tag that matched when one of the If-None-Match
// values inm names a copy that is still current. epoch is the answering
// server's (NewEpoch).
func Answer(snap *state.Snapshot, model, epoch string, ctl Context, inm []string) (*api.FullStatus, string, error) {
	rev, err := snap.StatusRevision(model)
	if err != nil {
		return nil, "", err
	}
	tag := statusTag{epoch: epoch, gen: snap.Generation(), rev: rev}
	if v, ok := notModified(inm, tag, ctl.Now); ok {
		return nil, v, nil
	}
	st, until, err := build(snap, model, ctl)
	if err != nil {
		return nil, "", err
	}
	if !until.IsZero() {
		tag.until = until.UnixNano()
	}
	return st, tag.String(), nil
}

// ContextOf names the controller, and the cloud and region a hub placed
// it in (the local provider's localhost/localhost otherwise), as of now.
func ContextOf(snap *state.Snapshot, now time.Time) Context {
	sc := Context{Cloud: "localhost", Region: "localhost", Version: version.Version, Now: now}
	if c, err := snap.Controller(); err == nil && c != nil {
		sc.ControllerName = c.Name
		if c.Region != "" {
			sc.Region = c.Region
		}
		if c.Cloud != "" {
			sc.Cloud = c.Cloud
		}
	}
	return sc
}
