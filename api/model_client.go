package api

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// ModelClient is the part of the API scoped to one model
// (/v1/models/{uuid}/...): the model itself, its applications, units,
// machines, relations, tasks, log stream and watch. Get one from
// Client.Model; it is a small value, cheap to make per call. It sends
// through its Client, so it shares that client's transport, credentials,
// addresses and the highest X-Drover-Index seen: a write through one
// ModelClient is visible to a ReadYourWrites read through any other of
// the same Client. Behind a hub that index is the one of the controller
// the model is placed on (PlaceModel).
type ModelClient struct {
	c    *Client
	uuid string
}

// Model returns the client of the model with this UUID. It makes no call:
// a model that does not exist answers ErrNotFound on the first one.
func (c *Client) Model(uuid string) ModelClient { return ModelClient{c: c, uuid: uuid} }

// UUID is the UUID of the model this client calls.
func (m ModelClient) UUID() string { return m.uuid }

// Info returns the model.
func (m ModelClient) Info(ctx context.Context, opts ...ReadOptions) (*Model, error) {
	var out struct {
		Model
		ModelIndex
	}
	if err := m.c.get(ctx, modelPath(m.uuid), nil, opts, &out); err != nil {
		return nil, err
	}
	if out.ControllerUUID != "" { // a hub's index entry
		out.Model.applyIndex(&out.ModelIndex)
	}
	return &out.Model, nil
}

// Destroy destroys the model. It returns the dying model, or nil when the
// model is already gone.
func (m ModelClient) Destroy(ctx context.Context, force bool) (*Model, error) {
	var out *Model
	if err := m.c.write(ctx, http.MethodDelete, modelPath(m.uuid), forceQuery(force), nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Config returns the model's config.
func (m ModelClient) Config(ctx context.Context, opts ...ReadOptions) (map[string]any, error) {
	var out map[string]any
	return out, m.c.get(ctx, modelPath(m.uuid, "config"), nil, opts, &out)
}

// ModelConstraints returns the model's constraints (juju
// model-constraints).
func (m ModelClient) ModelConstraints(ctx context.Context, opts ...ReadOptions) (string, error) {
	var out ModelConstraints
	err := m.c.get(ctx, modelPath(m.uuid, "constraints"), nil, opts, &out)
	return out.Constraints, err
}

// SetModelConstraints sets the model's constraints (juju
// set-model-constraints): the defaults of its new machines, under their
// application's own.
func (m ModelClient) SetModelConstraints(ctx context.Context, constraints string) (*Model, error) {
	var out Model
	return &out, m.c.write(ctx, http.MethodPost, modelPath(m.uuid, "constraints"), nil, SetModelConstraintsRequest{Constraints: constraints}, &out)
}

// SetConfig changes the model's config and returns the new values of the
// keys it changed (nil for a key now unset).
func (m ModelClient) SetConfig(ctx context.Context, change ConfigChange) (map[string]any, error) {
	var out map[string]any
	return out, m.c.write(ctx, http.MethodPatch, modelPath(m.uuid, "config"), nil, change, &out)
}

// Status returns the model's full status, shaped like `juju status`.
func (m ModelClient) Status(ctx context.Context, opts ...ReadOptions) (*FullStatus, error) {
	var out FullStatus
	if err := m.c.get(ctx, modelPath(m.uuid, "status"), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StatusHistoryFilter selects the status history of one entity.
type StatusHistoryFilter struct {
	Entity string // unit, application or machine name; the model UUID for the model
	Kind   string // a StatusKind* constant; empty lets the server choose
	Limit  int    // 0: the server's default
}

// StatusHistory returns an entity's recorded statuses, newest first.
func (m ModelClient) StatusHistory(ctx context.Context, f StatusHistoryFilter,
	opts ...ReadOptions) ([]StatusHistoryEntry, error) {
	q := url.Values{"entity": {f.Entity}}
	if f.Kind != "" {
		q.Set("kind", f.Kind)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out []StatusHistoryEntry
	return out, m.c.get(ctx, modelPath(m.uuid, "status-history"), q, opts, &out)
}

// UploadCharm uploads a charm for use in the model. A hub forwards it to
// the controller that owns the model; a controller treats it as
// Client.UploadCharm.
func (m ModelClient) UploadCharm(ctx context.Context, archive io.Reader) (*Charm, error) {
	data, err := io.ReadAll(archive)
	if err != nil {
		return nil, Errorf(CodeBadRequest, "api client: read charm archive: %v", err)
	}
	var out Charm
	r := &request{method: http.MethodPost, path: modelPath(m.uuid, "charms"), body: data, contentType: "application/zip"}
	if err := m.c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Charm describes an uploaded charm through the model's route, which a hub
// forwards (the controller-wide Client.Charm is not reachable through a
// hub).
func (m ModelClient) Charm(ctx context.Context, sha256 string, opts ...ReadOptions) (*Charm, error) {
	var out Charm
	if err := m.c.get(ctx, modelPath(m.uuid, "charms", sha256), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
