package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// unitPath is /v1/models/{model}/units/{app}/{n}/segments...
func unitPath(model, unit string, segments ...string) (string, error) {
	app, n, ok := strings.Cut(unit, "/")
	if !ok || app == "" || n == "" || strings.Contains(n, "/") {
		return "", Errorf(CodeBadRequest, "invalid unit name %q", unit)
	}
	return modelPath(model, append([]string{"units", app, n}, segments...)...), nil
}

// Applications lists the model's applications.
func (m ModelClient) Applications(ctx context.Context, opts ...ReadOptions) ([]Application, error) {
	var out []Application
	return out, m.c.get(ctx, modelPath(m.uuid, "applications"), nil, opts, &out)
}

// Deploy deploys an uploaded charm as an application.
func (m ModelClient) Deploy(ctx context.Context, req DeployRequest) (*DeployResult, error) {
	var out DeployResult
	if err := m.c.write(ctx, http.MethodPost, modelPath(m.uuid, "applications"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Application returns one application.
func (m ModelClient) Application(ctx context.Context, app string, opts ...ReadOptions) (*Application, error) {
	var out Application
	if err := m.c.get(ctx, modelPath(m.uuid, "applications", app), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveApplication destroys an application; force removes its units at
// once.
func (m ModelClient) RemoveApplication(ctx context.Context, app string, force bool) error {
	return m.c.write(ctx, http.MethodDelete, modelPath(m.uuid, "applications", app), forceQuery(force), nil, nil)
}

// ApplicationConfig returns every config option of an application.
func (m ModelClient) ApplicationConfig(ctx context.Context, app string, opts ...ReadOptions) (*ApplicationConfig, error) {
	var out ApplicationConfig
	if err := m.c.get(ctx, modelPath(m.uuid, "applications", app, "config"), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetApplicationConfig changes an application's config.
func (m ModelClient) SetApplicationConfig(ctx context.Context, app string, change ConfigChange) (*ApplicationConfig, error) {
	var out ApplicationConfig
	p := modelPath(m.uuid, "applications", app, "config")
	if err := m.c.write(ctx, http.MethodPatch, p, nil, change, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AddUnits adds units to an application.
func (m ModelClient) AddUnits(ctx context.Context, app string, req AddUnitsRequest) (*DeployResult, error) {
	var out DeployResult
	p := modelPath(m.uuid, "applications", app, "units")
	if err := m.c.write(ctx, http.MethodPost, p, nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// appAction posts body to /applications/{app}/{action} and returns the
// application.
func (m ModelClient) appAction(ctx context.Context, app, action string, body any) (*Application, error) {
	var out Application
	if err := m.c.write(ctx, http.MethodPost, modelPath(m.uuid, "applications", app, action), nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Scale sets the number of units of an application.
func (m ModelClient) Scale(ctx context.Context, app string, scale int) (*Application, error) {
	return m.appAction(ctx, app, "scale", ScaleRequest{Scale: scale})
}

// Expose exposes (or with false unexposes) an application.
func (m ModelClient) Expose(ctx context.Context, app string, exposed bool) (*Application, error) {
	return m.appAction(ctx, app, "expose", ExposeRequest{Exposed: exposed})
}

// SetCharm upgrades an application to another uploaded charm (juju
// refresh): req names the charm, and may switch to one of another name,
// force units in error and change config with it.
func (m ModelClient) SetCharm(ctx context.Context, app string, req SetCharmRequest) (*Application, error) {
	return m.appAction(ctx, app, "charm", req)
}

// SetTrust trusts an application, or no longer.
func (m ModelClient) SetTrust(ctx context.Context, app string, trust bool) (*Application, error) {
	return m.appAction(ctx, app, "trust", SetTrustRequest{Trust: trust})
}

// SetConstraints sets the constraints of an application's new machines.
func (m ModelClient) SetConstraints(ctx context.Context, app, constraints string) (*Application, error) {
	return m.appAction(ctx, app, "constraints", SetConstraintsRequest{Constraints: constraints})
}

// AddMachines adds empty machines (juju add-machine).
func (m ModelClient) AddMachines(ctx context.Context, req AddMachinesRequest) ([]Machine, error) {
	var out []Machine
	if err := m.c.write(ctx, http.MethodPost, modelPath(m.uuid, "machines"), nil, req, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// CancelTask cancels a pending task (juju cancel-task).
func (m ModelClient) CancelTask(ctx context.Context, id string) (*Task, error) {
	var out Task
	if err := m.c.write(ctx, http.MethodPost, modelPath(m.uuid, "tasks", id, "cancel"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UnitRelationInfo returns a unit's relations with their data bags
// (show-unit). It needs write access to the model: relation data may hold
// credentials.
func (m ModelClient) UnitRelationInfo(ctx context.Context, unit string, opts ...ReadOptions) ([]UnitRelationInfo, error) {
	p, err := unitPath(m.uuid, unit)
	if err != nil {
		return nil, err
	}
	var out []UnitRelationInfo
	if err := m.c.get(ctx, p+"/relation-info", nil, opts, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Units lists the model's units.
func (m ModelClient) Units(ctx context.Context, opts ...ReadOptions) ([]Unit, error) {
	var out []Unit
	return out, m.c.get(ctx, modelPath(m.uuid, "units"), nil, opts, &out)
}

// Unit returns one unit, named "app/N".
func (m ModelClient) Unit(ctx context.Context, unit string, opts ...ReadOptions) (*Unit, error) {
	p, err := unitPath(m.uuid, unit)
	if err != nil {
		return nil, err
	}
	var out Unit
	if err := m.c.get(ctx, p, nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveUnit destroys a unit; force removes it at once.
func (m ModelClient) RemoveUnit(ctx context.Context, unit string, force bool) error {
	p, err := unitPath(m.uuid, unit)
	if err != nil {
		return err
	}
	return m.c.write(ctx, http.MethodDelete, p, forceQuery(force), nil, nil)
}

// Resolved marks a unit's failed hook resolved: retried, or skipped with
// noRetry.
func (m ModelClient) Resolved(ctx context.Context, unit string, noRetry bool) (*Unit, error) {
	p, err := unitPath(m.uuid, unit, "resolved")
	if err != nil {
		return nil, err
	}
	var out Unit
	if err := m.c.write(ctx, http.MethodPost, p, nil, ResolvedRequest{NoRetry: noRetry}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Machines lists the model's machines.
func (m ModelClient) Machines(ctx context.Context, opts ...ReadOptions) ([]Machine, error) {
	var out []Machine
	return out, m.c.get(ctx, modelPath(m.uuid, "machines"), nil, opts, &out)
}

// Machine returns one machine.
func (m ModelClient) Machine(ctx context.Context, id string, opts ...ReadOptions) (*Machine, error) {
	var out Machine
	if err := m.c.get(ctx, modelPath(m.uuid, "machines", id), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveMachine destroys a machine; force also removes its units.
func (m ModelClient) RemoveMachine(ctx context.Context, id string, force bool) error {
	return m.c.write(ctx, http.MethodDelete, modelPath(m.uuid, "machines", id), forceQuery(force), nil, nil)
}

// Relations lists the model's relations.
func (m ModelClient) Relations(ctx context.Context, opts ...ReadOptions) ([]Relation, error) {
	var out []Relation
	return out, m.c.get(ctx, modelPath(m.uuid, "relations"), nil, opts, &out)
}

// Integrate relates two endpoints, each "app" or "app:endpoint".
func (m ModelClient) Integrate(ctx context.Context, a, b string) (*Relation, error) {
	var out Relation
	req := IntegrateRequest{Endpoints: [2]string{a, b}}
	if err := m.c.write(ctx, http.MethodPost, modelPath(m.uuid, "relations"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveRelation destroys a relation by id.
func (m ModelClient) RemoveRelation(ctx context.Context, id int, force bool) error {
	return m.c.write(ctx, http.MethodDelete, modelPath(m.uuid, "relations", strconv.Itoa(id)), forceQuery(force), nil, nil)
}

// RunAction enqueues an action on units and returns one task per unit.
func (m ModelClient) RunAction(ctx context.Context, req RunActionRequest) ([]Task, error) {
	var out []Task
	return out, m.c.write(ctx, http.MethodPost, modelPath(m.uuid, "actions"), nil, req, &out)
}

// TaskFilter narrows Tasks; empty fields match everything.
type TaskFilter struct {
	Receiver string // unit name
	Status   string // a Task* status
}

// Tasks lists the model's tasks.
func (m ModelClient) Tasks(ctx context.Context, f TaskFilter, opts ...ReadOptions) ([]Task, error) {
	q := url.Values{}
	if f.Receiver != "" {
		q.Set("receiver", f.Receiver)
	}
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	var out []Task
	return out, m.c.get(ctx, modelPath(m.uuid, "tasks"), q, opts, &out)
}

// Task returns a task; with wait > 0 the server holds the answer until the
// task has finished or wait has passed (the per-attempt timeout is
// extended by wait).
func (m ModelClient) Task(ctx context.Context, id string, wait time.Duration, opts ...ReadOptions) (*Task, error) {
	r := &request{method: http.MethodGet, path: modelPath(m.uuid, "tasks", id), read: readOpts(opts)}
	if wait > 0 {
		r.query = url.Values{"wait": {wait.String()}}
		r.extra = wait
	}
	var out Task
	if err := m.c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
