package store_test

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestParseChange: a session's end is read back from its payload; every
// other payload, malformed, unknown or empty, drops everything.
func TestParseChange(t *testing.T) {
	const sid = "0b6f3e5c-5a4e-4f7e-9c1d-2a8b7c6d5e4f"
	for _, c := range []struct {
		payload string
		want    store.Change
	}{
		{"", store.Change{Kind: store.ChangeAll}},
		{"signing-keys", store.Change{Kind: store.ChangeSigningKeys}},
		{"session:" + sid, store.SessionEnded(sid)},
		{"session:", store.Change{Kind: store.ChangeAll}},
		{"session:" + strings.ToUpper(sid), store.Change{Kind: store.ChangeAll}},
		{"session:{" + sid + "}", store.Change{Kind: store.ChangeAll}},
		{"session:urn:uuid:" + sid, store.Change{Kind: store.ChangeAll}},
		{"session:" + sid + " ", store.Change{Kind: store.ChangeAll}},
		{"session:not-a-uuid", store.Change{Kind: store.ChangeAll}},
		{"Session:" + sid, store.Change{Kind: store.ChangeAll}},
		{"grants", store.Change{Kind: store.ChangeAll}},
	} {
		if got := store.ParseChange(c.payload); got != c.want {
			t.Errorf("ParseChange(%q) = %+v, want %+v", c.payload, got, c.want)
		}
	}
	if p := store.SessionEnded("not-a-uuid").Payload(); p != "" {
		t.Errorf("a session that is no UUID is announced as %q, want the full flush", p)
	}
}

// FuzzParseChange: no payload makes ParseChange panic, a session it reads
// is one a payload announces exactly, and every Change it reads is
// announced by the payload it came from.
func FuzzParseChange(f *testing.F) {
	for _, s := range []string{"", "signing-keys", "session:0b6f3e5c-5a4e-4f7e-9c1d-2a8b7c6d5e4f", "session:", "session:x", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		c := store.ParseChange(payload)
		if c.Kind != store.ChangeSessionEnded && c.Session != "" {
			t.Fatalf("%q: a session in %+v", payload, c)
		}
		if c.Kind != store.ChangeAll && c.Payload() != payload {
			t.Fatalf("%q read as %+v, which is announced as %q", payload, c, c.Payload())
		}
		if got := store.ParseChange(c.Payload()); got != c {
			t.Fatalf("%+v does not round-trip: %+v", c, got)
		}
	})
}
