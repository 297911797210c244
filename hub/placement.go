package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/indexer"
	"github.com/droverhq/drover/hub/internal/proxy"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// handleAddModel places a new model: among the controllers where the caller
// may add models (one ListObjects) that the caller's organization may use
// (usableBy), filtered by the requested controller,
// region and cloud, deprecated ones passed over, connected ones first, then the least loaded (fewest
// models, machines and units in the index: store.Controllers.Loads). It creates the model on the first candidate as that
// controller's superuser, and moves on to the next candidate when one
// fails for a reason of its own (unreachable, internal error). The model
// joins the index in the caller's organization with the caller as owner
// (administrator).
func (s controllersAPI) handleAddModel(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	var req api.AddModelRequest
	err := reply.Decode(r, &req)
	var (
		m   store.Model
		idx uint64
	)
	if err == nil {
		m, idx, err = s.addModel(r.Context(), p, req)
	}
	annotate(r.Context(), func(a *auditInfo) {
		a.ModelUUID, a.ControllerUUID, a.ModelName = m.UUID, m.ControllerUUID, req.Name
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The controller's index of the creation, as a relayed answer carries
	// it: a client's next read of the model waits for it (ADR 0028).
	if idx > 0 {
		w.Header().Set(api.HeaderIndex, strconv.FormatUint(idx, 10))
	}
	reply.JSON(w, http.StatusCreated, m)
}

// addModel places the model and returns it with the raft index at which
// its controller created it.
func (s controllersAPI) addModel(ctx context.Context, p authn.Principal, req api.AddModelRequest) (store.Model, uint64, error) {
	if req.Name == "" {
		return store.Model{}, 0, fmt.Errorf("%w: a model name is required", reply.ErrBadRequest)
	}
	if err := api.CheckModelName(req.Name); err != nil { // before claiming it, or asking any controller
		return store.Model{}, 0, fmt.Errorf("%w: %w", reply.ErrBadRequest, err)
	}
	if req.Owner != "" && req.Owner != p.Identity.Name() && req.Owner != p.Identity.ID {
		return store.Model{}, 0, fmt.Errorf("%w: a model added through the hub is owned by its creator", reply.ErrBadRequest)
	}
	// One add-model of a name at a time in an organization; the others
	// are told the name is taken, before any controller is asked.
	claimed, err := s.store.Models.ClaimName(ctx, p.Identity.Org, req.Name, s.cfg.claimLease)
	if err != nil {
		return store.Model{}, 0, err
	}
	if !claimed {
		if _, err := s.store.Models.ByName(ctx, p.Identity.Org, req.Name); err == nil {
			return store.Model{}, 0, modelExists(p, req.Name)
		}
		return store.Model{}, 0, errors.Join(store.ErrAlreadyExists, fmt.Errorf("model %q is being added in organization %s by another request "+
			"(if none is running, one was interrupted: the name is free again within %v)", req.Name, p.Identity.Org, s.cfg.claimLease))
	}
	defer func() {
		if err := s.store.Models.ReleaseName(context.WithoutCancel(ctx), p.Identity.Org, req.Name); err != nil {
			s.cfg.Logger.Warn("placement: release the model name", "model", req.Name, "err", err)
		}
	}()
	// Renewed while this runs; stopped before the release above.
	defer s.holdClaim(ctx, "model name "+req.Name, func(ctx context.Context) error {
		return s.store.Models.RenewName(ctx, p.Identity.Org, req.Name, s.cfg.claimLease)
	})()
	if _, err := s.store.Models.ByName(ctx, p.Identity.Org, req.Name); err == nil {
		return store.Model{}, 0, modelExists(p, req.Name)
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.Model{}, 0, err
	}
	cands, err := s.placementCandidates(ctx, p, req)
	if err != nil {
		return store.Model{}, 0, err
	}
	var errs []error
	for _, c := range cands {
		m, idx, next, err := s.placeOn(ctx, c, p, req)
		if err == nil {
			s.gate.AwaitAuthz(ctx)
			m, err = s.store.Models.ByUUID(ctx, m.UUID)
			return m, idx, err
		}
		if !next {
			return store.Model{}, 0, err
		}
		s.cfg.Logger.Warn("placement: controller failed, trying the next", "controller", c.Name, "err", err)
		errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
	}
	return store.Model{}, 0, fmt.Errorf("%w: no controller could add the model: %w ('drover controllers' shows their health)",
		proxy.ErrUnavailable, joinErrors(errs, "; "))
}

// modelExists is the answer to an add-model of a name the caller's
// organization has, or is adding.
func modelExists(p authn.Principal, name string) error {
	return errors.Join(store.ErrAlreadyExists, fmt.Errorf("model %q already exists in organization %s", name, p.Identity.Org))
}

// holdClaim renews a claim (renew) every third of Config.claimLease until the
// returned stop is called.
func (s controllersAPI) holdClaim(ctx context.Context, what string, renew func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.cfg.claimLease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := renew(ctx); err != nil && ctx.Err() == nil {
					s.cfg.Logger.Warn("placement: renew the claim", "claim", what, "err", err)
				} else if err == nil {
					s.claimRenewals.Add(1)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// placeOn creates the model on one controller as its superuser and indexes
// it in the caller's organization with the caller as owner; next reports a
// failure of the controller's own (unreachable, internal error), after
// which the next candidate may be tried. Meanwhile a claim keeps the
// indexer from adopting the model when the controller's event comes
// first; if it adopted it anyway (the claim expired), the insert takes the
// row over (store.Models.Insert). idx is the controller's raft index of
// the creation.
func (s controllersAPI) placeOn(ctx context.Context, c store.Controller, p authn.Principal, req api.AddModelRequest) (m store.Model, idx uint64, next bool, err error) {
	owner := p.Identity.Name()
	if err := s.store.Models.ClaimPlacement(ctx, c.UUID, req.Name, owner, s.cfg.claimLease); err != nil {
		return store.Model{}, 0, false, err
	}
	defer s.holdClaim(ctx, "placement of "+req.Name, func(ctx context.Context) error {
		return s.store.Models.ClaimPlacement(ctx, c.UUID, req.Name, owner, s.cfg.claimLease)
	})()
	defer func() {
		if err := s.store.Models.ReleasePlacement(context.WithoutCancel(ctx), c.UUID, req.Name, owner); err != nil {
			s.cfg.Logger.Warn("placement: release claim", "controller", c.Name, "model", req.Name, "err", err)
		}
	}()
	var created api.Model
	if err := s.spokeCall(ctx, c, p, spokeSuperuser, "", http.MethodPost, "/v1/models",
		api.AddModelRequest{Name: req.Name, Owner: owner, Config: req.Config}, &created); err != nil {
		var ae *api.Error
		// A 4xx is about the request itself: another controller would say the same.
		return store.Model{}, 0, !errors.As(err, &ae) || ae.Status >= 500, err
	}
	m = store.Model{UUID: created.UUID, Name: req.Name, Org: p.Identity.Org, Owner: p.Identity.ID,
		ControllerUUID: c.UUID, Life: string(created.Life), Status: "available"}
	if err := s.store.Models.Insert(ctx, m); err != nil {
		// Lost a race for the name: undo on the controller.
		if uerr := s.spokeCall(context.WithoutCancel(ctx), c, p, spokeSuperuser, "", http.MethodDelete,
			"/v1/models/"+created.UUID+"?force=true", nil, nil); uerr != nil {
			s.cfg.Logger.Error("placement: could not remove an orphan model", "controller", c.Name, "model", created.UUID, "err", uerr)
		}
		return store.Model{}, 0, false, err
	}
	return m, created.ModifyIndex, false, nil
}

// noPlacement says why no controller may host the model: 403 when the
// caller sees one that fits but may not add models to it, 404 when none
// the caller can see fits.
func (s controllersAPI) noPlacement(ctx context.Context, p authn.Principal, req api.AddModelRequest, wanted func(store.Controller) bool) error {
	what := "any controller"
	switch {
	case req.Controller != "":
		what = "controller " + req.Controller
	case req.Region != "" && req.Cloud != "":
		what = "a controller in " + req.Cloud + "/" + req.Region
	case req.Region != "":
		what = "a controller in region " + req.Region
	case req.Cloud != "":
		what = "a controller in cloud " + req.Cloud
	}
	uuids, err := s.gate.List(ctx, p, authz.Reader, authz.TypeController)
	if err != nil {
		return err
	}
	visible, err := s.store.Controllers.List(ctx, uuids, false)
	if err != nil {
		return err
	}
	if req.Controller != "" {
		// The named controller exists, but not where the caller asked.
		if i := slices.IndexFunc(visible, func(c store.Controller) bool { return c.Name == req.Controller }); i >= 0 && !wanted(visible[i]) {
			c, where := visible[i], "region "+req.Region
			switch {
			case req.Region != "" && req.Cloud != "":
				where = req.Cloud + "/" + req.Region
			case req.Region == "":
				where = "cloud " + req.Cloud
			}
			return fmt.Errorf("%w: controller %s is in %s/%s, not in %s", reply.ErrBadRequest, c.Name, c.Cloud, c.Region, where)
		}
	}
	if i := slices.IndexFunc(visible, wanted); i >= 0 {
		hint := "ask for add-model access"
		switch c := visible[i]; {
		case req.Controller == "" || c.Org == "":
		case c.Org == p.Identity.Org:
			hint = "ask for add-model access on organization " + c.Org + ": the controller is its own"
		default:
			hint = "it belongs to organization " + c.Org + ", and hosts only that organization's models"
		}
		return errors.Join(reply.ErrForbidden, fmt.Errorf("you may not add models to %s (%s)", what, hint))
	}
	return errors.Join(reply.ErrNotFound, fmt.Errorf("there is no %s that you can see", strings.TrimPrefix(what, "a ")))
}

// placementCandidates orders the controllers that may host the model.
func (s controllersAPI) placementCandidates(ctx context.Context, p authn.Principal, req api.AddModelRequest) ([]store.Controller, error) {
	uuids, err := s.gate.List(ctx, p, authz.CanAddModel, authz.TypeController)
	if err != nil {
		return nil, err
	}
	listed, err := s.store.Controllers.List(ctx, uuids, false)
	if err != nil {
		return nil, err
	}
	all, err := s.usableBy(ctx, p, listed)
	if err != nil {
		return nil, err
	}
	loads, err := s.store.Controllers.Loads(ctx)
	if err != nil {
		return nil, err
	}
	wanted := func(c store.Controller) bool {
		return (req.Controller == "" || c.Name == req.Controller) && (req.Region == "" || c.Region == req.Region) &&
			(req.Cloud == "" || c.Cloud == req.Cloud)
	}
	var cands, deprecated []store.Controller
	for _, c := range all {
		switch {
		case !wanted(c):
		case c.Deprecated: // draining: no new models (set-controller-deprecated)
			deprecated = append(deprecated, c)
		default:
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 && len(deprecated) > 0 {
		names := make([]string, len(deprecated))
		for i, c := range deprecated {
			names[i] = c.Name
		}
		return nil, errors.Join(reply.ErrConflict, fmt.Errorf("controller %s takes no new models: deprecated by its administrators "+
			"(they may undo it: drover set-controller-deprecated NAME --false)", strings.Join(names, ", ")))
	}
	if len(cands) == 0 {
		return nil, s.noPlacement(ctx, p, req, wanted)
	}
	slices.SortStableFunc(cands, func(a, b store.Controller) int {
		if ah, bh := a.Status == indexer.StatusConnected, b.Status == indexer.StatusConnected; ah != bh {
			if ah {
				return -1
			}
			return 1
		}
		return loads[a.UUID] - loads[b.UUID]
	})
	return cands, nil
}

// usableBy keeps the controllers a model of p's organization may be
// placed on (ADR 0021): the shared ones, and the organization's own when p
// holds the organization's add-model as well. Another tenant's private
// controller never hosts the model, whatever it grants: its
// administrators would administer the model.
func (s controllersAPI) usableBy(ctx context.Context, p authn.Principal, cs []store.Controller) ([]store.Controller, error) {
	var own *bool
	out := cs[:0:0]
	for _, c := range cs {
		switch c.Org {
		case "":
			out = append(out, c)
		case p.Identity.Org:
			if own == nil {
				ok, err := s.gate.Check(ctx, p, authz.CanAddModel, authz.OrgObject(p.Identity.Org))
				if err != nil {
					return nil, err
				}
				own = &ok
			}
			if *own {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// joinErrors is errors.Join on one line: its parts separated by sep.
func joinErrors(errs []error, sep string) error {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return joinedErrors{msg: strings.Join(msgs, sep), errs: errs}
}

type joinedErrors struct {
	msg  string
	errs []error
}

func (j joinedErrors) Error() string   { return j.msg }
func (j joinedErrors) Unwrap() []error { return j.errs }
