package spoke

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/hubtrust"
	"github.com/droverhq/drover/spoke/internal/state"
)

// DefaultHubTokenTTL is a hub token's lifetime when none is asked for.
const DefaultHubTokenTTL = time.Hour

// NewHubToken issues a single-use hub token: a join token for the purpose
// "hub", recorded (as its SHA-256) in raft before it is handed out, so
// that the command that consumes it can refuse a second use on any node.
func (s *Server) NewHubToken(ctx context.Context, ttl time.Duration) (api.JoinToken, uint64, error) {
	if ttl <= 0 {
		ttl = DefaultHubTokenTTL
	}
	if ttl > 7*24*time.Hour {
		return api.JoinToken{}, 0, api.Errorf(api.CodeInvalid, "hub token lifetime %s: at most 168h", ttl)
	}
	now := s.cfg.Now().UTC()
	exp := now.Add(ttl).Truncate(time.Second)
	tok := makeJoinToken(s.secret, s.ca.Fingerprint(), purposeHub, exp)
	_, idx, err := s.Propose(ctx, state.CreateHubTokenType, &state.CreateHubTokenRequest{Hash: hubTokenHash(tok), Expires: exp, Now: now})
	if err != nil {
		return api.JoinToken{}, idx, err
	}
	return api.JoinToken{Token: tok, Expires: exp}, idx, nil
}

func hubTokenHash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// TrustHub serves a hub's registration call: it checks the hub token's
// signature, purpose and expiry on this node (so forged tokens never reach
// raft), then in one raft command consumes the token and trusts the hub.
func (s *Server) TrustHub(ctx context.Context, req api.TrustHubRequest) (*api.HubTrust, uint64, error) {
	if err := verifyJoinToken(s.secret, s.ca.Fingerprint(), purposeHub, req.Token, s.cfg.Now()); err != nil {
		return nil, 0, api.Errorf(api.CodeUnauthorized, "hub token refused: %v", err)
	}
	trust := api.HubTrust{URL: strings.TrimRight(req.HubURL, "/"), JWKSURL: req.JWKSURL, CACert: req.HubCA, Source: api.HubTrustFromToken}
	if err := checkHubTrust(trust); err != nil {
		return nil, 0, err
	}
	v, idx, err := s.Propose(ctx, state.SetHubTrustType, &state.SetHubTrustRequest{Trust: trust,
		TokenHash: hubTokenHash(req.Token), Now: s.cfg.Now().UTC()})
	if err != nil {
		return nil, idx, err
	}
	out, err := hubTrustValue(v)
	if err != nil {
		return nil, idx, err
	}
	s.logger.Info("controller trusts a hub", "hub", out.URL, "source", out.Source)
	return out, idx, nil
}

// hubTrustValue reads SetHubTrust's value: the FSM's own when this node
// applied it, JSON when the leader did.
func hubTrustValue(v any) (*api.HubTrust, error) {
	switch x := v.(type) {
	case *api.HubTrust:
		return x, nil
	case json.RawMessage:
		var out api.HubTrust
		if err := json.Unmarshal(x, &out); err != nil {
			return nil, api.Errorf(api.CodeInternal, "decode hub trust: %v", err)
		}
		return &out, nil
	}
	return nil, api.Errorf(api.CodeInternal, "unexpected hub trust value %T", v)
}

// checkHubTrust checks what the FSM leaves to the proposer: the CA parses,
// and a verifier can be built from the whole.
func checkHubTrust(t api.HubTrust) error {
	if t.CACert != "" {
		rest := []byte(t.CACert)
		for {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				return api.Errorf(api.CodeInvalid, "hub CA: %v", err)
			}
		}
	}
	if _, err := hubtrust.New(hubtrust.Config{Issuer: t.URL, JWKSURL: t.JWKSURL, CACert: []byte(t.CACert)}); err != nil {
		return api.Errorf(api.CodeInvalid, "%v", err)
	}
	return nil
}

// flagsTrust is the hub trust the --hub-* start flags ask for, and their
// digest; ok is false when the flags name no hub.
func (s *Server) flagsTrust() (api.HubTrust, string, bool) {
	if s.cfg.HubURL == "" {
		return api.HubTrust{}, "", false
	}
	t := api.HubTrust{URL: strings.TrimRight(s.cfg.HubURL, "/"), JWKSURL: s.cfg.HubJWKSURL, CACert: string(s.cfg.HubCACert),
		Source: api.HubTrustFromFlags}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", t.URL, t.JWKSURL, t.CACert)
	return t, hex.EncodeToString(h.Sum(nil)), true
}

// applyHubFlags makes the replicated hub trust what this node's --hub-*
// flags say, unless this node already applied these very flags: then a
// change made at runtime since (another hub, or no hub) stands. See
// docs/decisions/0006-hub-trust.md.
func (s *Server) applyHubFlags(ctx context.Context) error {
	t, digest, ok := s.flagsTrust()
	if !ok {
		return nil
	}
	if _, err := s.WaitRead(ctx, 0, true); err != nil {
		return err
	}
	rec, err := s.Store().Snapshot().HubTrustRecord()
	if err != nil {
		return err
	}
	if rec != nil && rec.FlagDigests[s.ident.NodeID] == digest {
		if rec.Trust == nil || rec.Trust.URL != t.URL {
			s.logger.Warn("--hub-url ignored: the hub trust was changed at runtime since these flags were applied",
				"flag", t.URL, "trusted", trustedURL(rec.Trust))
		}
		return nil
	}
	_, _, err = s.Propose(ctx, state.SetHubTrustType, &state.SetHubTrustRequest{Trust: t,
		FlagsNode: s.ident.NodeID, FlagsDigest: digest, Now: s.cfg.Now().UTC()})
	if err == nil {
		s.logger.Info("controller trusts the hub given by --hub-url", "hub", t.URL)
	}
	return err
}

func trustedURL(t *api.HubTrust) string {
	if t == nil {
		return ""
	}
	return t.URL
}
