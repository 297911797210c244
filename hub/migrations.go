package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// migrationsAPI is the hub's migration API (api/migrations.go): start a
// model's migration to another controller, follow it, abort it, retry its
// reap. The migration driver (hub/internal/migrate) does the work.
type migrationsAPI struct{ *Server }

// resolveModel finds the model ref names, as the caller sees it: a UUID,
// org/name, or a name in the caller's organization. A model the caller
// cannot read is not found.
func (s migrationsAPI) resolveModel(ctx context.Context, p authn.Principal, ref string) (store.Model, error) {
	var m store.Model
	var err error
	switch org, name, qualified := strings.Cut(ref, "/"); {
	case uuid.Validate(ref) == nil:
		m, err = s.store.Models.ByUUID(ctx, ref)
	case qualified:
		m, err = s.store.Models.ByName(ctx, org, name)
	default:
		m, err = s.store.Models.ByName(ctx, p.Identity.Org, ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		return m, fmt.Errorf("%w: model %q", reply.ErrNotFound, ref)
	}
	if err != nil {
		return m, err
	}
	if err := s.gate.Require(ctx, p, authz.Reader, authz.Reader, authz.ModelObject(m.UUID)); err != nil {
		return m, fmt.Errorf("%w: model %q", reply.ErrNotFound, ref)
	}
	return m, nil
}

// requireModelAdmin answers ErrForbidden unless the caller administers
// model m (its administrators, its controller's and organization's).
func (s migrationsAPI) requireModelAdmin(ctx context.Context, p authn.Principal, modelUUID, modelName, what string) error {
	ok, err := s.gate.Check(ctx, p, authz.Administrator, authz.ModelObject(modelUUID))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s needs admin access to model %s to %s", reply.ErrForbidden, p.Identity.Name(), modelName, what)
	}
	return nil
}

func (s migrationsAPI) handleMigrate(w http.ResponseWriter, r *http.Request) {
	m, err := s.migrate(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusCreated, m)
}

func (s migrationsAPI) migrate(r *http.Request) (api.Migration, error) {
	ctx := r.Context()
	p, _ := authn.PrincipalFrom(ctx)
	var req api.MigrateRequest
	if err := reply.Decode(r, &req); err != nil {
		return api.Migration{}, err
	}
	if req.Model == "" || req.TargetController == "" {
		return api.Migration{}, fmt.Errorf(`%w: the body must name the model and the target controller: {"model": M, "target-controller": C}`, reply.ErrBadRequest)
	}
	m, err := s.resolveModel(ctx, p, req.Model)
	if err != nil {
		return api.Migration{}, err
	}
	annotate(ctx, func(a *auditInfo) {
		a.ModelUUID, a.ModelName, a.Org, a.ControllerUUID = m.UUID, m.Name, m.Org, m.ControllerUUID
	})
	target, err := s.store.Controllers.ByName(ctx, req.TargetController)
	if errors.Is(err, store.ErrNotFound) {
		return api.Migration{}, fmt.Errorf("%w: controller %q", reply.ErrNotFound, req.TargetController)
	}
	if err != nil {
		return api.Migration{}, err
	}
	if target.UUID == m.ControllerUUID {
		return api.Migration{}, api.Errorf(api.CodeInvalid, "model %s is already on controller %s", m.Name, target.Name)
	}
	if err := s.requireModelAdmin(ctx, p, m.UUID, m.Name, "migrate it"); err != nil {
		return api.Migration{}, err
	}
	if ok, err := s.gate.Check(ctx, p, authz.CanAddModel, authz.ControllerObject(target.UUID)); err != nil {
		return api.Migration{}, err
	} else if !ok {
		return api.Migration{}, fmt.Errorf("%w: %s needs add-model access to controller %s to migrate a model to it",
			reply.ErrForbidden, p.Identity.Name(), target.Name)
	}
	if err := s.notMigrating(ctx, m); err != nil {
		return api.Migration{}, err
	}
	if err := s.precheck(ctx, m, target.UUID); err != nil {
		return api.Migration{}, err
	}
	started, err := s.store.Migrations.Start(ctx, store.NewMigration{ModelUUID: m.UUID, ModelName: m.Name,
		SourceController: m.ControllerUUID, TargetController: target.UUID, RequestedBy: p.Identity.Name()}, s.cfg.Now())
	if errors.Is(err, store.ErrAlreadyExists) {
		return api.Migration{}, s.notMigrating(ctx, m)
	}
	if err != nil {
		return api.Migration{}, err
	}
	annotate(ctx, func(a *auditInfo) {
		a.Details = map[string]any{"migration": started.ID, "target-controller": target.Name}
	})
	s.migrations.Wake()
	return s.migrationOut(ctx, started), nil
}

// notMigrating refuses a model that has an active migration, naming it.
func (s migrationsAPI) notMigrating(ctx context.Context, m store.Model) error {
	active, err := s.store.Migrations.List(ctx, store.MigrationFilter{ModelUUID: m.UUID, Active: true, Limit: 1})
	if err != nil {
		return err
	}
	if len(active) > 0 {
		return fmt.Errorf("%w: model %s is already migrating (migration %s, in %s): wait for it to end, or abort it",
			reply.ErrConflict, m.Name, active[0].ID, active[0].Phase)
	}
	return nil
}

// precheck asks the source and the target whether they can take part,
// before anything is recorded: a unit in error, a target too old or a
// name taken answers at once, in the controller's words.
func (s migrationsAPI) precheck(ctx context.Context, m store.Model, targetUUID string) error {
	mc := migrationControllers{s.Server}
	src, err := mc.Client(ctx, m.ControllerUUID)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := mc.Client(ctx, targetUUID)
	if err != nil {
		return err
	}
	defer dst.Close()
	// The migration is not recorded yet: the prechecks name one of their own.
	id := uuid.NewString()
	step := api.MigrationStep{MigrationID: id, Key: id + "/" + string(migration.Precheck) + "/1"}
	res, err := src.MigrationPrecheck(ctx, m.UUID, step, api.MigrationPrecheckRequest{Role: api.MigrationSource})
	if err != nil {
		return fmt.Errorf("the source controller's precheck: %w", err)
	}
	if _, err := dst.MigrationPrecheck(ctx, m.UUID, step, api.MigrationPrecheckRequest{Role: api.MigrationTarget, Source: res}); err != nil {
		return fmt.Errorf("the target controller's precheck: %w", err)
	}
	return nil
}

// migrationOut is m as the API shows it: controllers by name, the agents'
// summary.
func (s migrationsAPI) migrationOut(ctx context.Context, m store.Migration) api.Migration {
	name := func(id string) string {
		if c, err := s.store.Controllers.ByUUID(ctx, id); err == nil {
			return c.Name
		}
		return id
	}
	out := api.Migration{ID: m.ID, ModelUUID: m.ModelUUID, ModelName: m.ModelName, SourceController: name(m.SourceController),
		TargetController: name(m.TargetController), Phase: string(m.Phase), Message: m.Message, Failure: m.Failure,
		AbortRequested: m.AbortRequested, RequestedBy: m.RequestedBy, StartedAt: m.StartedAt, UpdatedAt: m.UpdatedAt, EndedAt: m.EndedAt}
	_ = json.Unmarshal(m.Minions, &out.Agents)
	return out
}

// migration reads the migration the route names, which the caller must
// be able to read the model of.
func (s migrationsAPI) migration(r *http.Request) (store.Migration, error) {
	ctx := r.Context()
	p, _ := authn.PrincipalFrom(ctx)
	id := chi.URLParam(r, "id")
	m, err := s.store.Migrations.ByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return m, fmt.Errorf("%w: migration %q", reply.ErrNotFound, id)
	}
	if err != nil {
		return m, err
	}
	if err := s.gate.Require(ctx, p, authz.Reader, authz.Reader, authz.ModelObject(m.ModelUUID)); err != nil {
		return m, fmt.Errorf("%w: migration %q", reply.ErrNotFound, id)
	}
	annotate(ctx, func(a *auditInfo) {
		a.ModelUUID, a.ModelName, a.ControllerUUID = m.ModelUUID, m.ModelName, m.SourceController
		a.Details = map[string]any{"migration": m.ID}
	})
	return m, nil
}

func (s migrationsAPI) handleGetMigration(w http.ResponseWriter, r *http.Request) {
	m, err := s.migration(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, s.migrationOut(r.Context(), m))
}

func (s migrationsAPI) handleMigrationEvents(w http.ResponseWriter, r *http.Request) {
	m, err := s.migration(r)
	var evs []store.MigrationEvent
	if err == nil {
		evs, err = s.store.Migrations.Events(r.Context(), m.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]api.MigrationEvent, len(evs))
	for i, e := range evs {
		out[i] = api.MigrationEvent{Seq: e.Seq, At: e.At, Kind: e.Kind, Phase: string(e.Phase), Attempt: e.Attempt, Detail: e.Detail}
	}
	reply.JSON(w, http.StatusOK, out)
}

func (s migrationsAPI) handleListMigrations(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, _ := authn.PrincipalFrom(ctx)
	q := r.URL.Query()
	f := store.MigrationFilter{Active: q.Get("active") == "true", Limit: 1000}
	var err error
	if ref := q.Get("model"); ref != "" {
		var m store.Model
		if m, err = s.resolveModel(ctx, p, ref); err == nil {
			f.ModelUUID = m.UUID
		}
	}
	if name := q.Get("controller"); name != "" && err == nil {
		var c store.Controller
		if c, err = s.store.Controllers.ByName(ctx, name); errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("%w: controller %q", reply.ErrNotFound, name)
		}
		f.Controller = c.UUID
	}
	var phase migration.Phase
	if name := q.Get("phase"); name != "" && err == nil {
		if phase, err = migration.Parse(strings.ToUpper(name)); err != nil {
			err = fmt.Errorf("%w: %v", reply.ErrBadRequest, err)
		}
	}
	var ms []store.Migration
	if err == nil {
		ms, err = s.store.Migrations.List(ctx, f)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := []api.Migration{}
	for _, m := range ms {
		if phase != "" && m.Phase != phase {
			continue
		}
		if ok, err := s.gate.Check(ctx, p, authz.Reader, authz.ModelObject(m.ModelUUID)); err != nil {
			s.writeError(w, r, err)
			return
		} else if ok {
			out = append(out, s.migrationOut(ctx, m))
		}
	}
	reply.JSON(w, http.StatusOK, out)
}

func (s migrationsAPI) handleAbortMigration(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, _ := authn.PrincipalFrom(ctx)
	m, err := s.migration(r)
	if err == nil {
		err = s.requireModelAdmin(ctx, p, m.ModelUUID, m.ModelName, "abort its migration")
	}
	if err == nil {
		m, err = s.store.Migrations.RequestAbort(ctx, m.ID, p.Identity.Name(), s.cfg.Now())
		if errors.Is(err, store.ErrNotAbortable) {
			err = fmt.Errorf("%w: migration %s of model %s reached SUCCESS: the model is the target's and the migration cannot be aborted",
				reply.ErrConflict, m.ID, m.ModelName)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.migrations.Wake()
	reply.JSON(w, http.StatusOK, s.migrationOut(ctx, m))
}

func (s migrationsAPI) handleRetryReap(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, _ := authn.PrincipalFrom(ctx)
	m, err := s.migration(r)
	if err == nil {
		err = s.requireModelAdmin(ctx, p, m.ModelUUID, m.ModelName, "retry its reap")
	}
	if err == nil && m.Phase != migration.ReapFailed {
		err = fmt.Errorf("%w: migration %s of model %s is in %s: only a migration in REAPFAILED is reaped again",
			reply.ErrConflict, m.ID, m.ModelName, m.Phase)
	}
	if err == nil {
		m, err = s.store.Migrations.Advance(ctx, m.ID, migration.ReapFailed, migration.Reap,
			"reap retried by "+p.Identity.Name(), s.cfg.Now())
		if errors.Is(err, store.ErrPhaseMoved) {
			err = fmt.Errorf("%w: the migration's reap is being retried already", reply.ErrConflict)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.migrations.Wake()
	reply.JSON(w, http.StatusOK, s.migrationOut(ctx, m))
}

// lastMigration is model id's latest migration, nil for none.
func (s *Server) lastMigration(ctx context.Context, id string) (*api.Migration, error) {
	ms, err := s.store.Migrations.List(ctx, store.MigrationFilter{ModelUUID: id, Limit: 1})
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	m := migrationsAPI{s}.migrationOut(ctx, ms[0])
	return &m, nil
}
