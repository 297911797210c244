package hub

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/proxy"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// controllersAPI serves controller registration and removal, and model placement (the /v1/controllers writes and POST /v1/models). It is the hub's Server seen through those handlers.
type controllersAPI struct{ *Server }

// AddControllerRequest is the body of POST /v1/controllers.
type AddControllerRequest struct {
	Name string `json:"name"`
	// URL is https://HOST:PORT of one node of the controller.
	URL string `json:"url"`
	// CACert is the controller's CA (PEM); the hub pins it.
	CACert string `json:"ca-cert"`
	Region string `json:"region"`
	Cloud  string `json:"cloud,omitempty"`
	// Org, if set, makes the controller private to that organization.
	Org string `json:"org,omitempty"`
	// JoinToken, if set, is a hub token created on the controller
	// (`drover create-hub-token`): the hub first asks the controller to
	// trust it, then registers it. Without one the controller must
	// already trust the hub (droverd spoke --hub-url). Never audited.
	JoinToken string `json:"join-token,omitempty"`
}

var controllerNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// handleAddController registers a spoke. The hub learns the controller's
// UUID from its public identity route; with a join token it makes the
// controller trust it (trustHub); then it proves the trust is mutual by
// calling /v1/controller with a superuser token: a controller that does not
// trust this hub refuses it, and registration fails.
func (s controllersAPI) handleAddController(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	var req AddControllerRequest
	err := reply.Decode(r, &req)
	if err == nil {
		err = s.mayAddController(r.Context(), p, req.Org)
	}
	var c store.Controller
	if err == nil {
		c, err = s.registerController(r.Context(), p, req)
	}
	annotate(r.Context(), func(a *auditInfo) { a.ControllerUUID = c.UUID })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c.CACert = ""
	reply.JSON(w, http.StatusCreated, c)
}

func (s controllersAPI) registerController(ctx context.Context, p authn.Principal, req AddControllerRequest) (store.Controller, error) {
	if !controllerNameRe.MatchString(req.Name) {
		return store.Controller{}, fmt.Errorf("%w: controller name %q: lowercase letters, digits and hyphens", reply.ErrBadRequest, req.Name)
	}
	if req.Region == "" {
		return store.Controller{}, fmt.Errorf("%w: region is required", reply.ErrBadRequest)
	}
	req.Cloud = cmp.Or(req.Cloud, api.DefaultCloud)
	if err := api.CheckPlacement(req.Cloud, req.Region); err != nil {
		return store.Controller{}, fmt.Errorf("%w: %w", reply.ErrBadRequest, err)
	}
	u, err := url.Parse(req.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return store.Controller{}, fmt.Errorf("%w: url %q: want https://HOST:PORT", reply.ErrBadRequest, req.URL)
	}
	if n := strings.Count(req.CACert, "-----BEGIN CERTIFICATE-----"); n > 1 {
		return store.Controller{}, fmt.Errorf("%w: the controller CA must be one certificate, its CA's (as 'drover show-controller' prints it), not a bundle of %d", reply.ErrBadRequest, n)
	}
	sc, err := s.spokes.NewClient(req.CACert, []string{u.Host})
	if err != nil {
		return store.Controller{}, err
	}
	defer sc.CloseIdle()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var id api.ControllerIdentity
	if err := sc.Do(cctx, u.Host, http.MethodGet, "/v1/internal/identity", "", nil, &id); err != nil {
		return store.Controller{}, s.cannotRegister(u.Host, err)
	}
	if _, err := uuid.Parse(id.UUID); err != nil {
		return store.Controller{}, fmt.Errorf("%w: %s: its identity names no controller UUID", errNotAController, u.Host)
	}
	if err := s.mayRegisterAgain(ctx, p, id.UUID, req, sc); err != nil {
		return store.Controller{}, err
	}
	if req.JoinToken != "" {
		if err := s.trustHub(cctx, sc, u.Host, req.JoinToken); err != nil {
			return store.Controller{}, err
		}
	}
	addrs := id.APIAddresses
	if len(addrs) == 0 {
		addrs = []string{u.Host}
	}
	c := store.Controller{UUID: id.UUID, Name: req.Name, Org: req.Org, Region: req.Region, Cloud: req.Cloud,
		APIAddresses: addrs, CACert: req.CACert}
	var info api.ControllerInfo
	if err := s.spokeCall(cctx, c, authn.Principal{}, spokeSuperuser, "", http.MethodGet, "/v1/controller", nil, &info); err != nil {
		var refused *proxy.RefusedError
		if errors.As(err, &refused) {
			return store.Controller{}, fmt.Errorf("%w: controller %s does not trust this hub: pass --join-token from 'drover create-hub-token' run against it (or start it with --hub-url %s --hub-ca HUB_CA)",
				reply.ErrBadRequest, id.Name, s.cfg.PublicURL)
		}
		return store.Controller{}, err
	}
	if err := s.placeController(cctx, c); err != nil {
		return store.Controller{}, err
	}
	if err := s.store.Controllers.Upsert(ctx, c); err != nil {
		return store.Controller{}, err
	}
	s.gate.AwaitAuthz(ctx)
	s.indexer.Kick()
	return s.store.Controllers.ByName(ctx, req.Name)
}

// mayRegisterAgain refuses the registration of a controller UUID the hub
// already knows unless it is the same controller registered again by one
// of its administrators: same name, same owner, and the CA the hub pinned
// for it (a controller keeps its CA for life; a new bootstrap is a new
// controller). Registering it again updates its address, region and cloud.
// Anything else is a server claiming another controller's UUID, which
// would take over that controller's record, and every tenant's requests to
// its models with it.
func (s controllersAPI) mayRegisterAgain(ctx context.Context, p authn.Principal, id string, req AddControllerRequest, sc *proxy.Client) error {
	old, err := s.store.Controllers.ByUUID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	ok := p.Identity.ID == "" // the operator's own registration (RegisterController)
	if !ok {
		if ok, err = s.gate.Check(ctx, p, authz.Administrator, authz.ControllerObject(old.UUID)); err != nil {
			return err
		}
	}
	if !ok {
		return fmt.Errorf("%w: the controller at %s (UUID %s) is already registered with this hub; only its administrators may register it again",
			reply.ErrConflict, req.URL, id)
	}
	if old.Name != req.Name {
		return fmt.Errorf("%w: the controller at %s is registered as %q: register it again under that name", reply.ErrConflict, req.URL, old.Name)
	}
	if old.Org != req.Org {
		owner := "shared (owned by the hub)"
		if old.Org != "" {
			owner = "private to organization " + old.Org
		}
		return fmt.Errorf("%w: controller %s is %s; registering it again does not change its owner", reply.ErrConflict, old.Name, owner)
	}
	if pinned, err := ControllerCASHA256(old.CACert); err != nil || pinned != sc.CASHA256() {
		return fmt.Errorf("%w: the CA given is not the one the hub pinned for controller %s (a controller keeps its CA; one bootstrapped again is a new controller: remove this one first)",
			reply.ErrConflict, old.Name)
	}
	return nil
}

// placeController tells the controller the cloud and region it is
// registered in, so that its status (and so the hub's, which relays it)
// names the same place as the hub's model listing. A controller too old to
// take it keeps showing its own, localhost/localhost.
func (s controllersAPI) placeController(ctx context.Context, c store.Controller) error {
	err := s.spokeCall(ctx, c, authn.Principal{}, spokeSuperuser, "", http.MethodPut, "/v1/controller/placement",
		api.Placement{Cloud: c.Cloud, Region: c.Region}, nil)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code == api.CodeNotFound {
		s.cfg.Logger.Warn("controller cannot record its placement: its status shows its own cloud and region",
			"controller", c.Name, "err", err)
		return nil
	}
	return err
}

// mayAddController checks can_add_controller on org, or on the hub when
// org is empty. Everyone knows the hub exists, and an organization's
// members that it does: they are told they lack the permission (403);
// others are told nothing exists (404).
func (s controllersAPI) mayAddController(ctx context.Context, p authn.Principal, org string) error {
	if org != "" {
		return s.gate.Require(ctx, p, authz.CanAddController, authz.Member, authz.OrgObject(org))
	}
	ok, err := s.gate.Check(ctx, p, authz.CanAddController, authz.HubObject())
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s may not add controllers to the hub (a hub administrator may)", reply.ErrForbidden, p.Identity.Name())
	}
	return err
}

// trustHub hands a controller the hub token with the hub's public URL and
// CA, over TLS pinned to the controller's CA, so that it trusts this hub.
// The controller's refusal (401 unknown or expired token, 403 used) comes
// back as a bad request naming the reason.
func (s controllersAPI) trustHub(ctx context.Context, sc *proxy.Client, host, token string) error {
	ca, err := s.hubCA()
	if err != nil {
		return err
	}
	body, err := json.Marshal(api.TrustHubRequest{Token: token, HubURL: s.cfg.PublicURL, HubCA: ca})
	if err != nil {
		return err
	}
	var out api.HubTrust
	err = sc.Do(ctx, host, http.MethodPost, "/v1/internal/hub-trust", "", body, &out)
	if err == nil {
		return nil
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		switch ae.Code {
		case api.CodeNotFound:
			return fmt.Errorf("%w: the controller at %s predates hub tokens: start it with --hub-url %s --hub-ca HUB_CA and register without --join-token",
				reply.ErrBadRequest, host, s.cfg.PublicURL)
		case api.CodeUnauthorized, api.CodeForbidden, api.CodeInvalid, api.CodeBadRequest:
			return fmt.Errorf("%w: the controller refused the join token: %s", reply.ErrBadRequest, ae.Message)
		}
	}
	return s.cannotRegister(host, err)
}

// Why a controller being registered cannot be used, in the hub's words:
// the Go error (addresses, resolver and TLS internals) goes to the log.
var (
	errControllerUnreachable = errors.New("controller unreachable")
	errControllerTLS         = errors.New("TLS verification failed")
	errNotAController        = errors.New("not a Drover controller")
)

// cannotRegister is the answer to a registration whose controller at host
// failed with err, a transport error or an answer that is not the API's.
func (s controllersAPI) cannotRegister(host string, err error) error {
	s.cfg.Logger.Warn("register a controller: it failed", "host", host, "err", err)
	var verify *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var ae *api.Error
	switch {
	case errors.As(err, &verify) || errors.As(err, &unknownCA) || errors.As(err, &badHost) || errors.As(err, &invalid):
		return fmt.Errorf("%w: the server at %s did not present a certificate from the given controller CA for that address "+
			"(give the CA 'drover show-controller' prints, and the address the controller's certificate names)", errControllerTLS, host)
	case errors.Is(err, proxy.ErrNotAPI) || errors.As(err, &record):
		return fmt.Errorf("%w: the server at %s does not answer as a Drover controller's API (check the URL and port)", errNotAController, host)
	case errors.As(err, &ae):
		return fmt.Errorf("%w: the controller at %s failed: %s", errControllerUnreachable, host, ae.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: the controller at %s did not answer in time", errControllerUnreachable, host)
	}
	return fmt.Errorf("%w: nothing answered at %s (check the URL, that the controller runs, and that the hub may reach it)", errControllerUnreachable, host)
}

// hubCA is the CA (PEM) controllers pin to fetch the hub's JWKS: --tls-ca,
// or the generated CA; "" for a certificate from a public CA.
func (s controllersAPI) hubCA() (string, error) {
	path := s.cfg.TLSCA
	if path == "" && s.cfg.TLSCert == "" {
		path = CACertPath(s.cfg.StateDir)
	}
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("hub CA for controllers: %w", err)
	}
	return string(b), nil
}

// RegisterController registers a controller without a caller: the
// bootstrap path of `droverd dev` (the operator is the process owner). With
// public, everyone may see the controller and add models to it.
func (s *Server) RegisterController(ctx context.Context, req AddControllerRequest, public bool) (store.Controller, error) {
	c, err := controllersAPI{s}.registerController(ctx, authn.Principal{}, req)
	if err != nil {
		return c, err
	}
	if public {
		for _, rel := range []authz.Relation{authz.Reader, authz.CanAddModel} {
			if err := s.store.Grants.Add(ctx, authz.Tuple{User: authz.Everyone, Relation: rel, Object: authz.ControllerObject(c.UUID)}); err != nil {
				return c, err
			}
		}
		s.gate.AwaitAuthz(ctx)
	}
	return c, nil
}

// RemoveControllerResponse answers DELETE /v1/controllers/{name}.
type RemoveControllerResponse struct {
	Controller string `json:"controller"`
	// ForgottenModels are the models (OWNER/NAME) the hub forgot with it;
	// they keep running on the controller.
	ForgottenModels []string `json:"forgotten-models"`
}

// handleRemoveController forgets a registered controller: its
// administrators may (the hub's for a shared one, its organization's for a
// private one). The index still listing models on it refuses the request
// (409) unless force=true, which forgets them too. Nothing is asked of the
// controller: it keeps its models and its trust in the hub until its own
// superuser runs remove-hub-trust; registered again, its models are
// adopted again from its event stream.
// handleSetControllerDeprecated answers PATCH /v1/controllers/{name}
// {"deprecated": bool} (the controller's administrators, as remove-controller):
// a deprecated controller takes no new models, its models go on. The answer
// is the controller as GET /v1/controllers/{name} shows it.
func (s controllersAPI) handleSetControllerDeprecated(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	name := chi.URLParam(r, "name")
	annotate(r.Context(), func(a *auditInfo) { a.Target = name })
	var req struct {
		Deprecated *bool `json:"deprecated"`
	}
	err := reply.Decode(r, &req)
	if err == nil && req.Deprecated == nil {
		err = fmt.Errorf("%w: the body must say {\"deprecated\": true} or false", reply.ErrBadRequest)
	}
	var c store.Controller
	if err == nil {
		c, err = s.controllerFor(r.Context(), p, name, authz.Administrator)
		if c.UUID != "" {
			annotate(r.Context(), func(a *auditInfo) { a.ControllerUUID, a.ControllerName, a.Org = c.UUID, c.Name, c.Org })
		}
	}
	if err == nil {
		err = s.store.Controllers.SetDeprecated(r.Context(), c.UUID, *req.Deprecated)
		c.Deprecated = *req.Deprecated
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.routeCtrls.Clear()
	reply.JSON(w, http.StatusOK, c)
}

func (s controllersAPI) handleRemoveController(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	name := chi.URLParam(r, "name")
	annotate(r.Context(), func(a *auditInfo) { a.Target = name })
	out, err := s.removeController(r, p, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, out)
}

func (s controllersAPI) removeController(r *http.Request, p authn.Principal, name string) (RemoveControllerResponse, error) {
	ctx := r.Context()
	force, err := queryBool(r, "force")
	if err != nil {
		return RemoveControllerResponse{}, err
	}
	c, err := s.controllerFor(ctx, p, name, authz.Administrator)
	if c.UUID != "" {
		annotate(ctx, func(a *auditInfo) {
			a.ControllerUUID, a.ControllerName, a.Org, a.Details = c.UUID, c.Name, c.Org, map[string]any{"force": force}
		})
	}
	if err != nil {
		return RemoveControllerResponse{}, err
	}
	forgotten, err := s.store.Controllers.Remove(ctx, c.UUID, force)
	if hosts := (*store.HostsModelsError)(nil); errors.As(err, &hosts) {
		hosts.Models = ownModelsBare(p, hosts.Models)
		them, they := "them", "they keep"
		if len(hosts.Models) == 1 {
			them, they = "it", "it keeps"
		}
		return RemoveControllerResponse{}, errors.Join(reply.ErrConflict, fmt.Errorf(
			"%w: destroy %s first, or pass --force to make the hub forget %s (%s running on the controller)", err, them, them, they))
	}
	if err != nil {
		return RemoveControllerResponse{}, err
	}
	s.spokes.Forget(c.UUID)
	s.indexer.Kick()
	s.gate.AwaitAuthz(ctx)
	s.cfg.Logger.Info("controller removed", "controller", c.Name, "forgotten-models", len(forgotten), "by", p.Identity.Name())
	if forgotten == nil {
		forgotten = []string{}
	}
	return RemoveControllerResponse{Controller: c.Name, ForgottenModels: ownModelsBare(p, forgotten)}, nil
}

// ownModelsBare names p's own models among refs (OWNER/NAME) by their name
// alone, as drover does.
func ownModelsBare(p authn.Principal, refs []string) []string {
	own := p.Identity.Name() + "/"
	for i, ref := range refs {
		refs[i] = strings.TrimPrefix(ref, own)
	}
	return refs
}

// queryBool reads a boolean query parameter; absent is false.
func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: %s=%q: want true or false", reply.ErrBadRequest, name, v)
	}
	return b, nil
}
