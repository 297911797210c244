package hub

import (
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"

	"context"
	"fmt"
	"net/http"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
)

// requireHubAdmin lets the hub's administrators through; everyone else
// knows the hub exists, and is told they may not (403).
func (s identitiesAPI) requireHubAdmin(ctx context.Context, p authn.Principal, what string) error {
	ok, err := s.gate.Check(ctx, p, authz.Administrator, authz.HubObject())
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s may not %s (a hub administrator may)", reply.ErrForbidden, p.Identity.Name(), what)
	}
	return err
}

// handleListSigningKeys answers GET /v1/hub/signing-keys (the hub's
// administrators): every key still accepted, the current one first, and
// whether it is sealed in the database.
func (s identitiesAPI) handleListSigningKeys(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	keys, err := []api.SigningKey(nil), s.requireHubAdmin(r.Context(), p, "see the hub's signing keys")
	if err == nil {
		keys, err = s.keys.List(r.Context())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// handleRotateSigningKey answers POST /v1/hub/signing-keys (the hub's
// administrators): a new key signs from now on, on every replica (told
// through PostgreSQL). With revoke-previous the other keys are deleted, so
// what they signed is refused at once: for a key that may have leaked.
// Sessions then renew with their refresh tokens, and controllers fetch the
// hub's keys again when they meet the new one.
func (s identitiesAPI) handleRotateSigningKey(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	var req api.RotateSigningKeyRequest
	err := s.requireHubAdmin(r.Context(), p, "rotate the hub's signing keys")
	if err == nil && r.ContentLength != 0 { // no body: rotate, revoking nothing
		err = reply.Decode(r, &req)
	}
	var res api.RotateSigningKeyResult
	if err == nil {
		res.Current, res.Revoked, err = s.keys.RotateNow(r.Context(), req.RevokePrevious)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Revoked == nil {
		res.Revoked = []string{}
	}
	annotate(r.Context(), func(a *auditInfo) {
		a.Details = map[string]any{"kid": res.Current, "revoked": res.Revoked}
	})
	s.spokeTokens.Clear()
	s.dropAuthzCaches()
	if err := s.store.SigningKeys.Notify(context.WithoutCancel(r.Context())); err != nil {
		// The other replicas reload the keys within a minute anyway.
		s.cfg.Logger.Warn("could not tell the other replicas of the new signing key", "err", err)
	}
	s.cfg.Logger.Info("signing key rotated", "kid", res.Current, "revoked", res.Revoked, "by", p.Identity.Name())
	reply.JSON(w, http.StatusCreated, res)
}
