package state

import (
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func hubTrust(url string) api.HubTrust {
	return api.HubTrust{URL: url, CACert: testCA, Source: api.HubTrustFromToken}
}

func TestHubTrustValidation(t *testing.T) {
	h := newHarness(t)
	for name, tr := range map[string]api.HubTrust{
		"no URL":         {Source: api.HubTrustFromToken},
		"relative URL":   {URL: "hub.example.com", Source: api.HubTrustFromToken},
		"ftp URL":        {URL: "ftp://hub", Source: api.HubTrustFromToken},
		"bad JWKS URL":   {URL: "https://hub", JWKSURL: "/jwks", Source: api.HubTrustFromToken},
		"unknown source": {URL: "https://hub", Source: "magic"},
		"CA without PEM": {URL: "https://hub", CACert: "not a certificate", Source: api.HubTrustFromToken},
		"CA with a key":  {URL: "https://hub", CACert: "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n", Source: api.HubTrustFromToken},
	} {
		if _, err := h.apply(SetHubTrustType, &SetHubTrustRequest{Trust: tr, Now: t0}); !errorsIs(err, api.ErrInvalid) {
			t.Errorf("%s: got %v, want invalid", name, err)
		}
	}
	h.fails(SetHubTrustType, &SetHubTrustRequest{Trust: hubTrust("https://hub")}, api.ErrInvalid) // no time
	h.fails(SetHubTrustType, &SetHubTrustRequest{Trust: hubTrust("https://hub"), FlagsNode: "n1", Now: t0}, api.ErrInvalid)
	h.fails(CreateHubTokenType, &CreateHubTokenRequest{Hash: "x", Expires: t0, Now: t0}, api.ErrInvalid)
	h.fails(CreateHubTokenType, &CreateHubTokenRequest{Expires: t0.Add(time.Hour), Now: t0}, api.ErrInvalid)
	h.fails(RemoveHubTrustType, &RemoveHubTrustRequest{}, api.ErrNotFound)
	if tr, _ := h.snap().HubTrust(); tr != nil {
		t.Fatalf("failed commands set a trust: %+v", tr)
	}
}

func TestHubTokenSingleUse(t *testing.T) {
	h := newHarness(t)
	h.must(CreateHubTokenType, &CreateHubTokenRequest{Hash: "a", Expires: t0.Add(time.Hour), Now: t0})
	h.fails(CreateHubTokenType, &CreateHubTokenRequest{Hash: "a", Expires: t0.Add(time.Hour), Now: t0}, api.ErrAlreadyExists)

	// An unknown token changes nothing.
	h.fails(SetHubTrustType, &SetHubTrustRequest{Trust: hubTrust("https://evil"), TokenHash: "b", Now: t0}, api.ErrUnauthorized)
	if tr, _ := h.snap().HubTrust(); tr != nil {
		t.Fatalf("unknown token set a trust: %+v", tr)
	}

	got := h.must(SetHubTrustType, &SetHubTrustRequest{Trust: hubTrust("https://hub-1"), TokenHash: "a", Now: t0.Add(time.Minute)}).(*api.HubTrust)
	if got.URL != "https://hub-1" || !got.SetAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("trust: %+v", got)
	}
	if tok, _ := h.snap().HubTokenByHash("a"); tok == nil || !tok.Used {
		t.Fatalf("token not marked used: %+v", tok)
	}
	// Reused: forbidden, and the trust stays.
	h.fails(SetHubTrustType, &SetHubTrustRequest{Trust: hubTrust("https://hub-2"), TokenHash: "a", Now: t0.Add(2 * time.Minute)}, api.ErrForbidden)
	if tr, _ := h.snap().HubTrust(); tr == nil || tr.URL != "https://hub-1" {
		t.Fatalf("reused token changed the trust: %+v", tr)
	}

	h.must(RemoveHubTrustType, &RemoveHubTrustRequest{})
	if tr, _ := h.snap().HubTrust(); tr != nil {
		t.Fatalf("trust after removal: %+v", tr)
	}
	h.fails(RemoveHubTrustType, &RemoveHubTrustRequest{}, api.ErrNotFound)
}

func TestHubTokenExpiry(t *testing.T) {
	h := newHarness(t)
	h.must(CreateHubTokenType, &CreateHubTokenRequest{Hash: "old", Expires: t0.Add(time.Hour), Now: t0})
	// Expiry is judged at the proposer's time, never a clock in Apply.
	h.fails(SetHubTrustType, &SetHubTrustRequest{Trust: hubTrust("https://hub"), TokenHash: "old", Now: t0.Add(time.Hour)}, api.ErrUnauthorized)
	if tok, _ := h.snap().HubTokenByHash("old"); tok == nil || tok.Used {
		t.Fatalf("expired token consumed: %+v", tok)
	}
	// Creating a token drops the expired ones.
	h.must(CreateHubTokenType, &CreateHubTokenRequest{Hash: "new", Expires: t0.Add(3 * time.Hour), Now: t0.Add(2 * time.Hour)})
	if tok, _ := h.snap().HubTokenByHash("old"); tok != nil {
		t.Fatalf("expired token kept: %+v", tok)
	}
}

// TestHubTrustFlags: a node's start flags apply once; a runtime change is
// not undone by the same flags again, but new flags win.
func TestHubTrustFlags(t *testing.T) {
	h := newHarness(t)
	flags := func(url, digest string) *SetHubTrustRequest {
		return &SetHubTrustRequest{Trust: api.HubTrust{URL: url, Source: api.HubTrustFromFlags}, FlagsNode: "n1", FlagsDigest: digest, Now: t0}
	}
	h.must(SetHubTrustType, flags("https://hub-a", "da"))
	h.must(CreateHubTokenType, &CreateHubTokenRequest{Hash: "t", Expires: t0.Add(time.Hour), Now: t0})
	h.must(SetHubTrustType, &SetHubTrustRequest{Trust: hubTrust("https://hub-b"), TokenHash: "t", Now: t0})
	got := h.must(SetHubTrustType, flags("https://hub-a", "da")).(*api.HubTrust)
	if got.URL != "https://hub-b" {
		t.Fatalf("unchanged flags undid the runtime change: %+v", got)
	}
	h.must(RemoveHubTrustType, &RemoveHubTrustRequest{})
	if got, _ := h.apply(SetHubTrustType, flags("https://hub-a", "da")); got.(*api.HubTrust) != nil {
		t.Fatalf("unchanged flags undid the removal: %+v", got)
	}
	got = h.must(SetHubTrustType, flags("https://hub-c", "dc")).(*api.HubTrust)
	if got.URL != "https://hub-c" || got.Source != api.HubTrustFromFlags {
		t.Fatalf("changed flags: %+v", got)
	}
	rec, _ := h.snap().HubTrustRecord()
	if rec.FlagDigests["n1"] != "dc" {
		t.Fatalf("digests: %+v", rec.FlagDigests)
	}
}
