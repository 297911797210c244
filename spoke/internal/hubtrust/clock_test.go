package hubtrust

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestClockSkew: a hub token, handed out by the hub with 30 s or more
// left of its 60, is accepted by a controller whose clock is up to 30 s
// behind the hub's or 60 s ahead; further off, it is refused as ErrClock,
// saying the token's times and the controller's, so the operator fixes
// the clocks rather than the trust. Within 5 s, as before 2026-11-22, a
// controller a few seconds behind refused every token as plainly invalid.
func TestClockSkew(t *testing.T) {
	srv, sig := testIssuer(t, nil)
	hubNow := time.Unix(1_800_000_000, 0)
	// What the hub hands out at hubNow, at the end of its reuse: minted
	// 30 s before, for 60 s.
	minted := hubNow.Add(-30 * time.Second)
	tok := superuserToken(t, sig, minted, "")
	fresh := superuserToken(t, sig, hubNow, "")
	for _, c := range []struct {
		skew   time.Duration // the controller's clock minus the hub's
		raw    string
		accept bool
	}{
		{0, tok, true},
		{-25 * time.Second, fresh, true},
		{55 * time.Second, tok, true},
		{-40 * time.Second, fresh, false}, // issued in the future, by the controller's clock
		{70 * time.Second, tok, false},    // expired, by the controller's clock
	} {
		now := hubNow.Add(c.skew)
		v, err := New(Config{Issuer: "https://hub", JWKSURL: srv.URL, HTTPClient: srv.Client(), MinRefresh: -1,
			Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Verify(t.Context(), c.raw, "ctl")
		switch {
		case c.accept && err != nil:
			t.Errorf("clock %v off: refused: %v", c.skew, err)
		case !c.accept && (!errors.Is(err, ErrClock) || !errors.Is(err, ErrInvalid) ||
			!strings.Contains(err.Error(), "this controller's clock says "+now.UTC().Format(time.RFC3339))):
			t.Errorf("clock %v off: %v, want ErrClock with the controller's time", c.skew, err)
		}
	}
}

// superuserToken signs a hub token for audience "ctl", issued at minted
// for a minute, naming the controller CA ca ("": none).
func superuserToken(t *testing.T, sig jose.Signer, minted time.Time, ca string) string {
	t.Helper()
	raw, err := jwt.Signed(sig).Claims(wireClaims{Claims: jwt.Claims{Issuer: "https://hub", Subject: "alice",
		Audience: jwt.Audience{"ctl"}, IssuedAt: jwt.NewNumericDate(minted), Expiry: jwt.NewNumericDate(minted.Add(time.Minute))},
		Access: AccessSuperuser, CA: ca}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
