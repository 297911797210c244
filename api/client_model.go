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

// Applications lists a model's applications.
func (c *Client) Applications(ctx context.Context, model string, opts ...ReadOptions) ([]Application, error) {
	var out []Application
	return out, c.get(ctx, modelPath(model, "applications"), nil, opts, &out)
}

// Deploy deploys an uploaded charm as an application.
func (c *Client) Deploy(ctx context.Context, model string, req DeployRequest) (*DeployResult, error) {
	var out DeployResult
	if err := c.write(ctx, http.MethodPost, modelPath(model, "applications"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Application returns one application.
func (c *Client) Application(ctx context.Context, model, app string, opts ...ReadOptions) (*Application, error) {
	var out Application
	if err := c.get(ctx, modelPath(model, "applications", app), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveApplication destroys an application; force removes its units at
// once.
func (c *Client) RemoveApplication(ctx context.Context, model, app string, force bool) error {
	return c.write(ctx, http.MethodDelete, modelPath(model, "applications", app), forceQuery(force), nil, nil)
}

// ApplicationConfig returns every config option of an application.
func (c *Client) ApplicationConfig(ctx context.Context, model, app string, opts ...ReadOptions) (*ApplicationConfig, error) {
	var out ApplicationConfig
	if err := c.get(ctx, modelPath(model, "applications", app, "config"), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetApplicationConfig changes an application's config.
func (c *Client) SetApplicationConfig(ctx context.Context, model, app string, change ConfigChange) (*ApplicationConfig, error) {
	var out ApplicationConfig
	p := modelPath(model, "applications", app, "config")
	if err := c.write(ctx, http.MethodPatch, p, nil, change, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AddUnits adds units to an application.
func (c *Client) AddUnits(ctx context.Context, model, app string, req AddUnitsRequest) (*DeployResult, error) {
	var out DeployResult
	p := modelPath(model, "applications", app, "units")
	if err := c.write(ctx, http.MethodPost, p, nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// appAction posts body to /applications/{app}/{action} and returns the
// application.
func (c *Client) appAction(ctx context.Context, model, app, action string, body any) (*Application, error) {
	var out Application
	if err := c.write(ctx, http.MethodPost, modelPath(model, "applications", app, action), nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Scale sets the number of units of an application.
func (c *Client) Scale(ctx context.Context, model, app string, scale int) (*Application, error) {
	return c.appAction(ctx, model, app, "scale", ScaleRequest{Scale: scale})
}

// Expose exposes (or with false unexposes) an application.
func (c *Client) Expose(ctx context.Context, model, app string, exposed bool) (*Application, error) {
	return c.appAction(ctx, model, app, "expose", ExposeRequest{Exposed: exposed})
}

// SetCharm upgrades an application to another uploaded charm (juju
// refresh): req names the charm, and may switch to one of another name,
// force units in error and change config with it.
func (c *Client) SetCharm(ctx context.Context, model, app string, req SetCharmRequest) (*Application, error) {
	return c.appAction(ctx, model, app, "charm", req)
}

// SetTrust trusts an application, or no longer.
func (c *Client) SetTrust(ctx context.Context, model, app string, trust bool) (*Application, error) {
	return c.appAction(ctx, model, app, "trust", SetTrustRequest{Trust: trust})
}

// SetConstraints sets the constraints of an application's new machines.
func (c *Client) SetConstraints(ctx context.Context, model, app, constraints string) (*Application, error) {
	return c.appAction(ctx, model, app, "constraints", SetConstraintsRequest{Constraints: constraints})
}

// AddMachines adds empty machines (juju add-machine).
func (c *Client) AddMachines(ctx context.Context, model string, req AddMachinesRequest) ([]Machine, error) {
	var out []Machine
	if err := c.write(ctx, http.MethodPost, modelPath(model, "machines"), nil, req, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// CancelTask cancels a pending task (juju cancel-task).
func (c *Client) CancelTask(ctx context.Context, model, id string) (*Task, error) {
	var out Task
	if err := c.write(ctx, http.MethodPost, modelPath(model, "tasks", id, "cancel"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UnitRelationInfo returns a unit's relations with their data bags
// (show-unit). It needs write access to the model: relation data may hold
// credentials.
func (c *Client) UnitRelationInfo(ctx context.Context, model, unit string, opts ...ReadOptions) ([]UnitRelationInfo, error) {
	p, err := unitPath(model, unit)
	if err != nil {
		return nil, err
	}
	var out []UnitRelationInfo
	if err := c.get(ctx, p+"/relation-info", nil, opts, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Units lists a model's units.
func (c *Client) Units(ctx context.Context, model string, opts ...ReadOptions) ([]Unit, error) {
	var out []Unit
	return out, c.get(ctx, modelPath(model, "units"), nil, opts, &out)
}

// Unit returns one unit, named "app/N".
func (c *Client) Unit(ctx context.Context, model, unit string, opts ...ReadOptions) (*Unit, error) {
	p, err := unitPath(model, unit)
	if err != nil {
		return nil, err
	}
	var out Unit
	if err := c.get(ctx, p, nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveUnit destroys a unit; force removes it at once.
func (c *Client) RemoveUnit(ctx context.Context, model, unit string, force bool) error {
	p, err := unitPath(model, unit)
	if err != nil {
		return err
	}
	return c.write(ctx, http.MethodDelete, p, forceQuery(force), nil, nil)
}

// Resolved marks a unit's failed hook resolved: retried, or skipped with
// noRetry.
func (c *Client) Resolved(ctx context.Context, model, unit string, noRetry bool) (*Unit, error) {
	p, err := unitPath(model, unit, "resolved")
	if err != nil {
		return nil, err
	}
	var out Unit
	if err := c.write(ctx, http.MethodPost, p, nil, ResolvedRequest{NoRetry: noRetry}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Machines lists a model's machines.
func (c *Client) Machines(ctx context.Context, model string, opts ...ReadOptions) ([]Machine, error) {
	var out []Machine
	return out, c.get(ctx, modelPath(model, "machines"), nil, opts, &out)
}

// Machine returns one machine.
func (c *Client) Machine(ctx context.Context, model, id string, opts ...ReadOptions) (*Machine, error) {
	var out Machine
	if err := c.get(ctx, modelPath(model, "machines", id), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveMachine destroys a machine; force also removes its units.
func (c *Client) RemoveMachine(ctx context.Context, model, id string, force bool) error {
	return c.write(ctx, http.MethodDelete, modelPath(model, "machines", id), forceQuery(force), nil, nil)
}

// Relations lists a model's relations.
func (c *Client) Relations(ctx context.Context, model string, opts ...ReadOptions) ([]Relation, error) {
	var out []Relation
	return out, c.get(ctx, modelPath(model, "relations"), nil, opts, &out)
}

// Integrate relates two endpoints, each "app" or "app:endpoint".
func (c *Client) Integrate(ctx context.Context, model, a, b string) (*Relation, error) {
	var out Relation
	req := IntegrateRequest{Endpoints: [2]string{a, b}}
	if err := c.write(ctx, http.MethodPost, modelPath(model, "relations"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveRelation destroys a relation by id.
func (c *Client) RemoveRelation(ctx context.Context, model string, id int, force bool) error {
	return c.write(ctx, http.MethodDelete, modelPath(model, "relations", strconv.Itoa(id)), forceQuery(force), nil, nil)
}

// RunAction enqueues an action on units and returns one task per unit.
func (c *Client) RunAction(ctx context.Context, model string, req RunActionRequest) ([]Task, error) {
	var out []Task
	return out, c.write(ctx, http.MethodPost, modelPath(model, "actions"), nil, req, &out)
}

// TaskFilter narrows Tasks; empty fields match everything.
type TaskFilter struct {
	Receiver string // unit name
	Status   string // a Task* status
}

// Tasks lists a model's tasks.
func (c *Client) Tasks(ctx context.Context, model string, f TaskFilter, opts ...ReadOptions) ([]Task, error) {
	q := url.Values{}
	if f.Receiver != "" {
		q.Set("receiver", f.Receiver)
	}
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	var out []Task
	return out, c.get(ctx, modelPath(model, "tasks"), q, opts, &out)
}

// Task returns a task; with wait > 0 the server holds the answer until the
// task has finished or wait has passed (the per-attempt timeout is
// extended by wait).
func (c *Client) Task(ctx context.Context, model, id string, wait time.Duration, opts ...ReadOptions) (*Task, error) {
	r := &request{method: http.MethodGet, path: modelPath(model, "tasks", id), read: readOpts(opts)}
	if wait > 0 {
		r.query = url.Values{"wait": {wait.String()}}
		r.extra = wait
	}
	var out Task
	if err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
