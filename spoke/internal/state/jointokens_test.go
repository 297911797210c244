package state

import (
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

func TestJoinTokenValidation(t *testing.T) {
	h := newHarness(t)
	h.fails(CreateJoinTokenType, &CreateJoinTokenRequest{Hash: "x", Expires: t0, Now: t0}, api.ErrInvalid)
	h.fails(CreateJoinTokenType, &CreateJoinTokenRequest{Expires: t0.Add(time.Hour), Now: t0}, api.ErrInvalid)
	h.fails(UseJoinTokenType, &UseJoinTokenRequest{Hash: "x", Now: t0}, api.ErrInvalid)
	h.fails(UseJoinTokenType, &UseJoinTokenRequest{Hash: "x", Node: "node-1"}, api.ErrInvalid)
}

func TestJoinTokenSingleUse(t *testing.T) {
	h := newHarness(t)
	h.must(CreateJoinTokenType, &CreateJoinTokenRequest{Hash: "a", Expires: t0.Add(time.Hour), Now: t0})
	h.fails(CreateJoinTokenType, &CreateJoinTokenRequest{Hash: "a", Expires: t0.Add(time.Hour), Now: t0}, api.ErrAlreadyExists)

	h.fails(UseJoinTokenType, &UseJoinTokenRequest{Hash: "b", Node: "node-1", Now: t0}, api.ErrUnauthorized)
	if tok, _ := h.snap().JoinTokenByHash("b"); tok != nil {
		t.Fatalf("an unknown token was recorded: %+v", tok)
	}
	h.must(UseJoinTokenType, &UseJoinTokenRequest{Hash: "a", Node: "node-1", Now: t0.Add(time.Minute)})
	if tok, _ := h.snap().JoinTokenByHash("a"); tok == nil || !tok.Used || tok.Node != "node-1" {
		t.Fatalf("token not marked used by node-1: %+v", tok)
	}
	// Reused: forbidden, and the record still names the first node.
	h.fails(UseJoinTokenType, &UseJoinTokenRequest{Hash: "a", Node: "node-2", Now: t0.Add(2 * time.Minute)}, api.ErrForbidden)
	if tok, _ := h.snap().JoinTokenByHash("a"); tok.Node != "node-1" {
		t.Fatalf("a refused use changed the token: %+v", tok)
	}
	// Hub tokens and join tokens are apart: a join token's hash is no hub token.
	h.fails(SetHubTrustType, &SetHubTrustRequest{Trust: hubTrust("https://hub"), TokenHash: "a", Now: t0}, api.ErrUnauthorized)
}

func TestJoinTokenExpiry(t *testing.T) {
	h := newHarness(t)
	h.must(CreateJoinTokenType, &CreateJoinTokenRequest{Hash: "old", Expires: t0.Add(time.Hour), Now: t0})
	h.fails(UseJoinTokenType, &UseJoinTokenRequest{Hash: "old", Node: "node-1", Now: t0.Add(time.Hour)}, api.ErrUnauthorized)
	if tok, _ := h.snap().JoinTokenByHash("old"); tok == nil || tok.Used {
		t.Fatalf("an expired token was consumed: %+v", tok)
	}
	// The next token created after the expiry drops it.
	h.must(CreateJoinTokenType, &CreateJoinTokenRequest{Hash: "new", Expires: t0.Add(3 * time.Hour), Now: t0.Add(2 * time.Hour)})
	if tok, _ := h.snap().JoinTokenByHash("old"); tok != nil {
		t.Fatalf("expired token kept: %+v", tok)
	}
}
