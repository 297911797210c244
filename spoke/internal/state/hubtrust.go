package state

import (
	"encoding/pem"
	"maps"
	"net/url"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// hubTrustKey is the key of the one row of the hub_trust table.
const hubTrustKey = "hub"

// HubTrustRecord returns the hub trust row, or nil if never written.
func (r *reader) HubTrustRecord() (*tables.HubTrustRecord, error) {
	return first[tables.HubTrustRecord](r, tables.HubTrust, "id", hubTrustKey)
}

// HubTrust returns the hub the controller trusts, or nil.
func (r *reader) HubTrust() (*api.HubTrust, error) {
	rec, err := r.HubTrustRecord()
	if err != nil || rec == nil {
		return nil, err
	}
	return rec.Trust, nil
}

// HubTokenByHash returns a hub join token by its hash, or nil.
func (r *reader) HubTokenByHash(hash string) (*tables.HubToken, error) {
	return first[tables.HubToken](r, tables.HubTokens, "id", hash)
}

// HubTokenPending reports whether a hub token is recorded, unused and
// unexpired at now: a hub may be registering the controller, so a trust
// this replica has not applied yet may exist.
func (r *reader) HubTokenPending(now time.Time) (bool, error) {
	all, err := list[tables.HubToken](r, tables.HubTokens, "id")
	if err != nil {
		return false, err
	}
	for _, tok := range all {
		if !tok.Used && now.Before(tok.Expires) {
			return true, nil
		}
	}
	return false, nil
}

// createHubToken records a hub join token and drops the tokens that
// expired before req.Now, so the table stays small.
func createHubToken(t *Txn, req *CreateHubTokenRequest) error {
	if req.Hash == "" || req.Expires.IsZero() || req.Now.IsZero() {
		return api.Errorf(api.CodeInvalid, "hub token hash, expiry and time are required")
	}
	if !req.Expires.After(req.Now) {
		return api.Errorf(api.CodeInvalid, "hub token expires before it is created")
	}
	all, err := list[tables.HubToken](&t.reader, tables.HubTokens, "id")
	if err != nil {
		return err
	}
	for _, tok := range all {
		if !req.Now.Before(tok.Expires) {
			if err := t.del(tables.HubTokens, tok); err != nil {
				return err
			}
		}
	}
	cur, err := t.HubTokenByHash(req.Hash)
	if err != nil {
		return err
	}
	if cur != nil {
		return api.Errorf(api.CodeAlreadyExists, "hub token already recorded")
	}
	return t.put(tables.HubTokens, &tables.HubToken{Hash: req.Hash, Expires: req.Expires})
}

// setHubTrust makes the controller trust req.Trust's hub. With TokenHash
// it first consumes that hub join token, in the same transaction: an
// unknown or expired token is unauthorized, a used one forbidden, and then
// nothing changes. With FlagsNode the command comes from that node's start
// flags: it records FlagsDigest for the node, and is a no-op when the node
// already applied these flags (a retried or repeated start).
func setHubTrust(t *Txn, req *SetHubTrustRequest) (*api.HubTrust, error) {
	if err := validateHubTrust(&req.Trust); err != nil {
		return nil, err
	}
	if req.Now.IsZero() {
		return nil, api.Errorf(api.CodeInvalid, "hub trust: time is required")
	}
	if (req.FlagsNode == "") != (req.FlagsDigest == "") {
		return nil, api.Errorf(api.CodeInvalid, "hub trust: flags node and digest go together")
	}
	cur, err := t.HubTrustRecord()
	if err != nil {
		return nil, err
	}
	rec := &tables.HubTrustRecord{Key: hubTrustKey}
	if cur != nil {
		rec.Meta, rec.FlagDigests = cur.Meta, maps.Clone(cur.FlagDigests)
		if req.FlagsNode != "" && cur.FlagDigests[req.FlagsNode] == req.FlagsDigest {
			return cur.Trust, nil
		}
	}
	if req.TokenHash != "" {
		if err := t.consumeHubToken(req.TokenHash, req.Now); err != nil {
			return nil, err
		}
	}
	if req.FlagsNode != "" {
		if rec.FlagDigests == nil {
			rec.FlagDigests = map[string]string{}
		}
		rec.FlagDigests[req.FlagsNode] = req.FlagsDigest
	}
	trust := req.Trust
	trust.SetAt = req.Now
	rec.Trust = &trust
	return &trust, t.put(tables.HubTrust, rec)
}

func (t *Txn) consumeHubToken(hash string, now time.Time) error {
	tok, err := t.HubTokenByHash(hash)
	if err != nil {
		return err
	}
	switch {
	case tok == nil:
		return api.Errorf(api.CodeUnauthorized, "unknown hub token: create one on the controller with 'drover create-hub-token'")
	case tok.Used:
		return api.Errorf(api.CodeForbidden, "the hub token was already used: create a new one")
	case !now.Before(tok.Expires):
		return api.Errorf(api.CodeUnauthorized, "the hub token expired at %s: create a new one", tok.Expires.UTC().Format(time.RFC3339))
	}
	used := *tok
	used.Used = true
	return t.put(tables.HubTokens, &used)
}

// removeHubTrust makes the controller trust no hub. The flag digests stay,
// so restarting a node with the flags it last applied does not bring the
// trust back.
func removeHubTrust(t *Txn, _ *RemoveHubTrustRequest) error {
	cur, err := t.HubTrustRecord()
	if err != nil {
		return err
	}
	if cur == nil || cur.Trust == nil {
		return api.Errorf(api.CodeNotFound, "this controller trusts no hub")
	}
	rec := *cur
	rec.Trust = nil
	rec.FlagDigests = maps.Clone(cur.FlagDigests)
	return t.put(tables.HubTrust, &rec)
}

// validateHubTrust checks what Apply can check without a network: URLs
// and the shape of the CA (the proposer parses the certificates).
func validateHubTrust(h *api.HubTrust) error {
	if err := checkHubURL("hub URL", h.URL, true); err != nil {
		return err
	}
	if err := checkHubURL("JWKS URL", h.JWKSURL, false); err != nil {
		return err
	}
	if h.Source != api.HubTrustFromFlags && h.Source != api.HubTrustFromToken {
		return api.Errorf(api.CodeInvalid, "hub trust source %q: want %s or %s", h.Source, api.HubTrustFromFlags, api.HubTrustFromToken)
	}
	if h.CACert != "" {
		rest, n := []byte(h.CACert), 0
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				return api.Errorf(api.CodeInvalid, "hub CA: unexpected PEM block %q", b.Type)
			}
			n++
		}
		if n == 0 {
			return api.Errorf(api.CodeInvalid, "hub CA: no PEM certificate")
		}
	}
	return nil
}

func checkHubURL(what, raw string, required bool) error {
	if raw == "" && !required {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return api.Errorf(api.CodeInvalid, "%s %q: want an absolute https URL", what, raw)
	}
	return nil
}
