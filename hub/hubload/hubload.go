// Package hubload fills a hub's index with synthetic controllers, models,
// identities and grants for benchmarks (bench/cmd/hubbench), through the
// hub's own store so every row's OpenFGA tuples go through the outbox like
// in production. It never talks to a controller. It is not for serving.
package hubload

import (
	"context"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/token"
)

// Loader seeds one hub.
type Loader struct {
	s *hub.Server
}

// New returns a loader for s.
func New(s *hub.Server) *Loader { return &Loader{s: s} }

// AddController registers a synthetic controller in org (no address is
// reachable: its indexer subscription just stays disconnected).
func (l *Loader) AddController(ctx context.Context, uuid, name, org, region string) error {
	return l.s.Store().Controllers.Upsert(ctx, store.Controller{UUID: uuid, Name: name, Org: org, Region: region,
		Cloud: "synthetic", APIAddresses: []string{"127.0.0.1:1"}})
}

// AddModel inserts an index row (and its controller, organization and
// owner tuples) for a model owned by the identity ownerID.
func (l *Loader) AddModel(ctx context.Context, uuid, name, org, ownerID, controllerUUID string) error {
	return l.s.Store().Models.Insert(ctx, store.Model{UUID: uuid, Name: name, Org: org, Owner: ownerID, ControllerUUID: controllerUUID})
}

// User logs a person in (creating the identity in org) and returns its id.
func (l *Loader) User(ctx context.Context, issuer, subject, email, org string) (string, error) {
	id, _, err := l.s.Store().Identities.Login(ctx, store.Identity{Issuer: issuer, Subject: subject, Email: email}, org, time.Now())
	return id.ID, err
}

// Grant gives the identity userID relation on object ("model:UUID", ...).
func (l *Loader) Grant(ctx context.Context, userID string, rel authz.Relation, object string) error {
	return l.s.Store().Grants.Add(ctx, authz.Tuple{User: authz.UserObject(userID), Relation: rel, Object: object})
}

// Token mints a hub session token for the identity id.
func (l *Loader) Token(ctx context.Context, id string, ttl time.Duration) (string, error) {
	ident, err := l.s.Store().Identities.ByID(ctx, id)
	if err != nil {
		return "", err
	}
	return l.s.MintAccessToken(ident, ttl, "")
}

// SpokeToken mints the token the hub would forward to a controller: aud =
// controllerUUID, the given access on model. Benchmarks use it to call the
// controller directly with the same credentials the hub's proxy sends.
func (l *Loader) SpokeToken(subject, controllerUUID, access, model string, ttl time.Duration) (string, error) {
	c, err := l.s.Store().Controllers.ByUUID(context.Background(), controllerUUID)
	if err != nil {
		return "", err
	}
	ca, err := hub.ControllerCASHA256(c.CACert)
	if err != nil {
		return "", err
	}
	now := time.Now()
	return l.s.Keys().Sign(token.Claims{Claims: jwt.Claims{Subject: subject, Audience: jwt.Audience{controllerUUID},
		Expiry: jwt.NewNumericDate(now.Add(ttl)), NotBefore: jwt.NewNumericDate(now.Add(-token.Leeway)), ID: subject + "-bench"},
		Name: subject, Access: access, Model: model, CA: ca})
}

// Settle waits until the outbox has delivered every tuple to OpenFGA.
func (l *Loader) Settle(ctx context.Context) error {
	for {
		l.s.Outbox().Kick()
		p, err := l.s.Store().Outbox.Pending(ctx, 1)
		if err != nil {
			return err
		}
		if len(p) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hubload: outbox not drained: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
