package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestPendingIdentity: a grant by email makes one pending identity per
// email (any case), a member of its organization; only a person's login
// with a verified email takes it over, once; an unverified one, or a
// service account that says the same email, gets an identity of its own.
func TestPendingIdentity(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	p, err := f.s.Identities.Pending(ctx, "Ann@Example.com", "acme")
	if err != nil || !p.Pending() || p.Email != "ann@example.com" || p.Org != "acme" || p.Name() != "ann@example.com" {
		t.Fatalf("PendingIdentity = %+v, %v", p, err)
	}
	if again, err := f.s.Identities.Pending(ctx, "ann@example.com", "globex"); err != nil || again.ID != p.ID {
		t.Fatalf("again = %+v, %v; want %s", again, err, p.ID)
	}
	if bob, err := f.s.Identities.Pending(ctx, "bob@example.com", "acme"); err != nil || bob.ID != f.bob.ID || bob.Pending() {
		t.Errorf("a person who logged in is not pending: %+v %v", bob, err)
	}
	if got := f.expected(t); !slices.Contains(got, "user:"+p.ID+" member organization:acme") {
		t.Errorf("the pending identity is not a member of acme: %q", got)
	}

	login := func(subject, email string, verified bool, kind string) store.Identity {
		t.Helper()
		id, _, err := f.s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: subject, Kind: kind, Email: email,
			EmailVerified: verified}, "acme", time.Now())

		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	if id := login("mallory", "ann@example.com", false, store.KindUser); id.ID == p.ID {
		t.Error("an unverified email took the pending identity over")
	}
	if id := login("svc", "ann@example.com", true, store.KindServiceAccount); id.ID == p.ID {
		t.Error("a service account took the pending identity over")
	}
	ann := login("ann", "ANN@example.com", true, store.KindUser)
	if ann.ID != p.ID || ann.Pending() || ann.Subject != "ann" || ann.LastLogin == nil {
		t.Fatalf("ann's first login = %+v, want the pending identity %s taken over", ann, p.ID)
	}
	if other := login("ann-2", "ann@example.com", true, store.KindUser); other.ID == p.ID {
		t.Error("a second person with the same email took the identity over again")
	}
}

// TestDisabledIdentity: a disabled identity's logins are refused and
// change nothing, a pending one's first login too; enabled, it logs in.
func TestDisabledIdentity(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	login := func(subject, email string) (store.Identity, error) {
		id, _, err := f.s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: subject, Email: email, EmailVerified: true},
			"acme", time.Now())

		return id, err
	}
	before, err := f.s.Identities.ByID(ctx, f.bob.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := f.s.Identities.SetDisabled(ctx, f.bob.ID, true, time.Now()); err != nil || d.DisabledAt == nil {
		t.Fatalf("disable: %+v %v", d, err)
	}
	// Of bob (disabled), alice, someone unknown and no UUID at all, only
	// alice is enabled.
	alice, err := login("alice", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if en, err := f.s.Identities.Enabled(ctx, []string{f.bob.ID, alice.ID, "6a1f0c2e-0000-4000-8000-000000000009", "nope"}); err != nil ||
		len(en) != 1 || !en[alice.ID] {
		t.Errorf("enabled identities: %v %v, want alice's alone", en, err)
	}
	if _, err := login("bob", "bob@example.com"); !errors.Is(err, store.ErrDisabled) || err.Error() != "user bob@example.com is disabled: store: disabled" {
		t.Errorf("a disabled identity's login: %v", err)
	}
	if after, _ := f.s.Identities.ByID(ctx, f.bob.ID); !after.LastLogin.Equal(*before.LastLogin) {
		t.Errorf("a refused login moved the last login from %v to %v", before.LastLogin, after.LastLogin)
	}
	p, err := f.s.Identities.Pending(ctx, "zoe@example.com", "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Identities.SetDisabled(ctx, p.ID, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := login("zoe", "zoe@example.com"); !errors.Is(err, store.ErrDisabled) {
		t.Errorf("the first login of a disabled pending identity: %v", err)
	}
	if e, err := f.s.Identities.SetDisabled(ctx, f.bob.ID, false, time.Now()); err != nil || e.DisabledAt != nil {
		t.Fatalf("enable: %+v %v", e, err)
	}
	if id, err := login("bob", "bob@example.com"); err != nil || id.ID != f.bob.ID {
		t.Errorf("login once enabled: %+v %v", id, err)
	}
}
