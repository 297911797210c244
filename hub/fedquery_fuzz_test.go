package hub

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/reply"
)

// FuzzParseSince: GET /v1/watch's since is a non-negative integer or
// absent; anything else is a bad request, never a panic.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"", "0", "1", "42", "-1", "9223372036854775807", "9223372036854775808", "1e3", " 1", "0x10", "+5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		n, err := parseSince(q)
		if err != nil {
			if !errors.Is(err, reply.ErrBadRequest) {
				t.Fatalf("parseSince(%q): %v, not a bad request", q, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("parseSince(%q) = %d", q, n)
		}
		if want, _ := strconv.ParseInt(q, 10, 64); q != "" && n != want {
			t.Fatalf("parseSince(%q) = %d, want %d", q, n, want)
		}
	})
}

// FuzzParseAccessObject: GET /v1/access's object is "hub" or TYPE:ID of a
// model (a UUID), a controller or an organization; anything else is a bad
// request, and what is accepted names an OpenFGA object of that type with
// no relation or wildcard smuggled in.
func FuzzParseAccessObject(f *testing.F) {
	for _, s := range []string{"hub", "hub:drover", "model:" + uuid.NewString(), "model:x", "controller:east",
		"organization:acme", "organization:", "user:bob", "controller:a#member", "model:*", "group:g", ":", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, id, err := parseAccessObject(s)
		if err != nil {
			if !errors.Is(err, reply.ErrBadRequest) {
				t.Fatalf("parseAccessObject(%q): %v, not a bad request", s, err)
			}
			return
		}
		if _, ok := accessLevels[typ]; !ok || id == "" || strings.ContainsAny(id, ":#* \t\r\n") {
			t.Fatalf("parseAccessObject(%q) = %q, %q", s, typ, id)
		}
		if typ == authz.TypeModel && uuid.Validate(id) != nil {
			t.Fatalf("parseAccessObject(%q): model %q is no UUID", s, id)
		}
		if gt, gid, err := authz.ParseObject(typ + ":" + id); err != nil || gt != typ || gid != id {
			t.Fatalf("parseAccessObject(%q) = %s:%s, which authz reads as %q %q %v", s, typ, id, gt, gid, err)
		}
	})
}
