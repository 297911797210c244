package token_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/keyseal"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/token"
)

func TestMain(m *testing.M) { os.Exit(hubtest.Main(m)) }

func claims(sub, aud string, exp time.Time) token.Claims {
	return token.Claims{Claims: jwt.Claims{Subject: sub, Audience: jwt.Audience{aud}, Expiry: jwt.NewNumericDate(exp)}}
}

func TestVerifyRejectsForeignIssuerKeyAudienceAndExpiry(t *testing.T) {
	st := hubtest.Store(t)
	now := time.Now()
	keys, err := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := keys.Sign(claims("u1", "drover-hub", now.Add(time.Minute)))
	if c, err := keys.Verify(good, "drover-hub"); err != nil || c.Subject != "u1" {
		t.Fatalf("good token: %v %v", c, err)
	}
	// A hub with its own keys (another database) signs foreign tokens.
	other, _ := token.New(t.Context(), token.Config{Store: hubtest.Store(t), Issuer: "https://hub"})
	foreign, _ := other.Sign(claims("u1", "drover-hub", now.Add(time.Minute)))
	wrongIss, _ := (func() (string, error) {
		k, _ := token.New(t.Context(), token.Config{Store: st, Issuer: "https://elsewhere"})
		return k.Sign(claims("u1", "drover-hub", now.Add(time.Minute)))
	})()
	expired, _ := keys.Sign(claims("u1", "drover-hub", now.Add(-time.Minute)))
	noExp, _ := keys.Sign(token.Claims{Claims: jwt.Claims{Subject: "u1", Audience: jwt.Audience{"drover-hub"}}})
	for name, raw := range map[string]string{
		"foreign key": foreign, "wrong issuer": wrongIss, "expired": expired, "no exp": noExp, "garbage": "a.b.c",
	} {
		if _, err := keys.Verify(raw, "drover-hub"); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := keys.Verify(good, "spoke-uuid"); err == nil {
		t.Error("wrong audience accepted")
	}
}

func TestRotationKeepsPreviousKeyValid(t *testing.T) {
	st := hubtest.Store(t)
	keys, err := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := keys.Sign(claims("u1", "drover-hub", time.Now().Add(time.Minute)))
	if err := keys.Rotate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := keys.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(keys.JWKS().Keys); n != 2 {
		t.Fatalf("JWKS has %d keys, want current + previous", n)
	}
	if _, err := keys.Verify(old, "drover-hub"); err != nil {
		t.Fatalf("token of the previous key: %v", err)
	}
	// A second replica on the same database signs with the same current key.
	replica, _ := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	fresh, _ := replica.Sign(claims("u2", "drover-hub", time.Now().Add(time.Minute)))
	if _, err := keys.Verify(fresh, "drover-hub"); err != nil {
		t.Fatalf("token from another replica: %v", err)
	}
}

// mustRing is keyseal.New's ring, for secrets known to be good.
func mustRing(r *keyseal.Ring, err error) *keyseal.Ring {
	if err != nil {
		panic(err)
	}
	return r
}

// storedKeys is every signing key row, plain or sealed, by kid.
func storedKeys(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	rows, err := st.SigningKeys.List(t.Context(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.KID] = r.PrivatePEM
	}
	return out
}

// TestSigningKeysAreSealedAtRest: with a key-encryption secret no signing
// key is stored plain. A hub started with one seals the keys stored plain
// before it, and the sessions they signed go on; one started without it,
// or with another, refuses to start and says why; a new secret that names
// the old one seals every key again with itself.
func TestSigningKeysAreSealedAtRest(t *testing.T) {
	st := hubtest.Store(t)
	ctx := t.Context()
	const secretA, secretB = "first secret, 32 bytes or longer!!", "second secret, 32 bytes or longer!"
	plain, err := token.New(ctx, token.Config{Store: st, Issuer: "https://hub"})
	if err != nil {
		t.Fatal(err)
	}
	session, _ := plain.Sign(claims("u1", "drover-hub", time.Now().Add(time.Minute)))
	for kid, stored := range storedKeys(t, st) {
		if !strings.HasPrefix(stored, "-----BEGIN PRIVATE KEY-----") {
			t.Fatalf("key %s without a secret: %.40q", kid, stored)
		}
	}

	sealedWith := func(r *keyseal.Ring) {
		t.Helper()
		rows := storedKeys(t, st)
		if len(rows) == 0 {
			t.Fatal("no keys stored")
		}
		for kid, stored := range rows {
			if !strings.HasPrefix(stored, "-----BEGIN DROVER SEALED PRIVATE KEY-----\nKey-Encryption-Key: "+r.ID()+"\n") {
				t.Errorf("key %s is not sealed with %s: %.80q", kid, r.ID(), stored)
			}
		}
	}
	a := mustRing(keyseal.New([]byte(secretA)))
	keysA, err := token.New(ctx, token.Config{Store: st, Issuer: "https://hub", Seal: a})
	if err != nil {
		t.Fatal(err)
	}
	sealedWith(a)
	if _, err := keysA.Verify(session, "drover-hub"); err != nil {
		t.Errorf("a session signed before the keys were sealed: %v", err)
	}
	if err := keysA.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	sealedWith(a)

	if _, err := token.New(ctx, token.Config{Store: st, Issuer: "https://hub"}); !errors.Is(err, keyseal.ErrSealed) ||
		!strings.Contains(err.Error(), "--key-encryption-key") {
		t.Errorf("a hub without the secret: %v", err)
	}
	b := mustRing(keyseal.New([]byte(secretB)))
	if _, err := token.New(ctx, token.Config{Store: st, Issuer: "https://hub", Seal: b}); !errors.Is(err, keyseal.ErrSealed) ||
		!strings.Contains(err.Error(), a.ID()) {
		t.Errorf("a hub with another secret: %v", err)
	}
	sealedWith(a)

	ba := mustRing(keyseal.New([]byte(secretB), []byte(secretA)))
	keysB, err := token.New(ctx, token.Config{Store: st, Issuer: "https://hub", Seal: ba})
	if err != nil {
		t.Fatal(err)
	}
	sealedWith(ba)
	if _, err := keysB.Verify(session, "drover-hub"); err != nil {
		t.Errorf("a session signed before the secret changed: %v", err)
	}
	// The replica still running with the old secret keeps the keys it
	// holds, and says what it cannot open.
	if err := keysA.Refresh(ctx); !errors.Is(err, keyseal.ErrSealed) {
		t.Errorf("refresh with the replaced secret: %v", err)
	}
	if _, err := keysA.Verify(session, "drover-hub"); err != nil {
		t.Errorf("the replica with the replaced secret lost its keys: %v", err)
	}
}

// TestKeysNoLongerAcceptedAreDeleted: a key retired longer than KeepFor is
// not only unpublished but gone from the database.
func TestKeysNoLongerAcceptedAreDeleted(t *testing.T) {
	st := hubtest.Store(t)
	now := time.Now()
	clock := func() time.Time { return now }
	keys, err := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub", KeepFor: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	first := storedKeys(t, st)
	now = now.Add(time.Minute)
	if err := keys.Rotate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := keys.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(storedKeys(t, st)); n != 2 {
		t.Fatalf("%d keys stored within KeepFor, want 2", n)
	}
	now = now.Add(2 * time.Hour)
	if err := keys.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	left := storedKeys(t, st)
	for kid := range first {
		if _, ok := left[kid]; ok {
			t.Errorf("key %s, retired 2 h ago with KeepFor 1 h, is still stored", kid)
		}
	}
	if len(left) != 1 || len(keys.JWKS().Keys) != 1 {
		t.Errorf("stored %d keys, published %d; want the current one", len(left), len(keys.JWKS().Keys))
	}
}

// TestAnotherReplicasNewKeyIsKnownAtOnce: a replica that meets a kid it
// does not hold reloads the keys (at most once a second), so the sessions
// another replica signs right after rotating are good everywhere.
func TestAnotherReplicasNewKeyIsKnownAtOnce(t *testing.T) {
	st := hubtest.Store(t)
	a, err := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	if err != nil {
		t.Fatal(err)
	}
	kid, revoked, err := a.RotateNow(t.Context(), false)
	if err != nil || len(revoked) != 0 {
		t.Fatalf("RotateNow: %v %v", revoked, err)
	}
	tok, _ := a.Sign(claims("u1", "drover-hub", time.Now().Add(time.Minute)))
	if _, err := b.Verify(tok, "drover-hub"); err != nil {
		t.Fatalf("the other replica's token signed with new key %s: %v", kid, err)
	}
	if n := len(b.JWKS().Keys); n != 2 {
		t.Errorf("the other replica publishes %d keys, want the new and the previous", n)
	}
}

// TestTheHubsOwnKeyChangesAreAudited: what the hub does to its keys by
// itself is in the audit log, for the hub's auditors: the first key, each
// automatic rotation, and each key it seals.
func TestTheHubsOwnKeyChangesAreAudited(t *testing.T) {
	st := hubtest.Store(t)
	ctx := t.Context()
	now := time.Now()
	clock := func() time.Time { return now }
	keys, err := token.New(ctx, token.Config{Store: st, Issuer: "https://hub", Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(31 * 24 * time.Hour)
	if err := keys.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	ring := mustRing(keyseal.New([]byte("a key-encryption secret of 32+ bytes")))
	if _, err := token.New(ctx, token.Config{Store: st, Issuer: "https://hub", Seal: ring, Now: clock}); err != nil {
		t.Fatal(err)
	}
	entries, _, err := st.Audit.Query(ctx, store.AuditQuery{All: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s %s first=%v automatic=%v was=%v secret=%v", e.Actor, e.Operation,
			e.Details["first"], e.Details["automatic"], e.Details["was"], e.Details["key-encryption-secret"]))
	}
	slices.Sort(got)
	want := []string{
		"hub rotate-signing-key first=<nil> automatic=true was=<nil> secret=<nil>",
		"hub rotate-signing-key first=true automatic=true was=<nil> secret=<nil>",
		"hub seal-signing-key first=<nil> automatic=<nil> was=plain secret=" + ring.ID(),
		"hub seal-signing-key first=<nil> automatic=<nil> was=plain secret=" + ring.ID(),
	}
	if !slices.Equal(got, want) {
		t.Errorf("audit:\n%q\nwant\n%q", got, want)
	}
}
