package hub

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/proxy"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/token"
)

// Access levels in the hub's spoke tokens (see spoke/internal/hubtrust).
const (
	spokeRead      = "read"
	spokeWrite     = "write"
	spokeAdmin     = "admin"
	spokeSuperuser = "superuser"
)

// spokeTokenTTL bounds a per-request spoke token. Watches outlive it: the
// spoke checks the token when the websocket opens.
const spokeTokenTTL = time.Minute

// spokeToken mints the per-request token the hub sends to a controller:
// audience = its UUID, subject = the caller, and the access the hub decided.
func (s *Server) spokeToken(p authn.Principal, controllerUUID, caSHA256, access, model string) (string, error) {
	jti := make([]byte, 12)
	_, _ = rand.Read(jti)
	now := s.cfg.Now()
	sub, name := "hub", "hub"
	if p.Identity.ID != "" {
		sub, name = p.Identity.ID, p.Identity.Name()
	}
	return s.keys.Sign(token.Claims{Claims: jwt.Claims{Subject: sub, Audience: jwt.Audience{controllerUUID},
		Expiry: jwt.NewNumericDate(now.Add(spokeTokenTTL)), NotBefore: jwt.NewNumericDate(now.Add(-token.Leeway)),
		ID: base64.RawURLEncoding.EncodeToString(jti)}, Name: name, Access: access, Model: model, CA: caSHA256})
}

// spokeCall sends one JSON request to a controller as p with access, trying
// its addresses in turn, and decodes the answer into out. A controller's
// own error comes back as *api.Error.
func (s *Server) spokeCall(ctx context.Context, c store.Controller, p authn.Principal, access, model, method, path string, in, out any) error {
	sc, err := s.spokes.Get(c)
	if err != nil {
		return err
	}
	tok, err := s.spokeToken(p, c.UUID, sc.CASHA256(), access, model)
	if err != nil {
		return err
	}
	return sc.Call(ctx, c.Name, tok, method, path, in, out)
}

// subscribeEvents dials controller c's event stream (/v1/events) with the
// query q, at each of its addresses until one answers, as the hub's
// superuser (the indexer's Config.Subscribe).
func (s *Server) subscribeEvents(ctx context.Context, c store.Controller, q url.Values) (*websocket.Conn, error) {
	sc, err := s.spokes.Get(c)
	if err != nil {
		return nil, err
	}
	if len(sc.Addrs()) == 0 {
		return nil, fmt.Errorf("no address")
	}
	tok, err := s.spokeToken(authn.Principal{}, c.UUID, sc.CASHA256(), spokeSuperuser, "")
	if err != nil {
		return nil, err
	}
	return sc.DialEvents(ctx, c.Name, tok, q)
}

// ControllerCASHA256 is the hex SHA-256 of the certificate the hub pins
// from a controller's CA (proxy.ControllerCASHA256).
func ControllerCASHA256(ca string) (string, error) { return proxy.ControllerCASHA256(ca) }
