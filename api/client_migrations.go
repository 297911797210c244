package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// The hub's migration routes (migrations.go), for drover's migrate,
// migrations and drain-controller.

// MigrationFilter selects migrations in GET /v1/migrations; empty fields
// select everything.
type MigrationFilter struct {
	Model      string // a UUID, OWNER/NAME or a name the caller owns
	Controller string // source or target controller's name
	Phase      string
	Active     bool // only migrations that have not ended
}

func (f MigrationFilter) query() url.Values {
	q := url.Values{}
	if f.Model != "" {
		q.Set("model", f.Model)
	}
	if f.Controller != "" {
		q.Set("controller", f.Controller)
	}
	if f.Phase != "" {
		q.Set("phase", f.Phase)
	}
	if f.Active {
		q.Set("active", "true")
	}
	return q
}

// Migrate asks the hub to start migrating a model to another controller.
func (c *Client) Migrate(ctx context.Context, req MigrateRequest) (*Migration, error) {
	var out Migration
	if err := c.write(ctx, http.MethodPost, v1Path("migrations"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Migrations lists the migrations f selects, newest first.
func (c *Client) Migrations(ctx context.Context, f MigrationFilter) ([]Migration, error) {
	var out migrationList
	if err := c.get(ctx, v1Path("migrations"), f.query(), nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Migration returns one migration (ErrNotFound: no such migration, or one
// the caller may not see).
func (c *Client) Migration(ctx context.Context, id string) (*Migration, error) {
	var out Migration
	if err := c.get(ctx, v1Path("migrations", id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MigrationEvents returns a migration's history, oldest first.
func (c *Client) MigrationEvents(ctx context.Context, id string) ([]MigrationEvent, error) {
	var out []MigrationEvent
	if err := c.get(ctx, v1Path("migrations", id, "events"), nil, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// AbortMigration asks the hub to abort a migration; the hub's driver acts
// on it (the answer's AbortRequested), until the migration is ABORTED. The
// hub refuses once the migration has reached SUCCESS.
func (c *Client) AbortMigration(ctx context.Context, id string) (*Migration, error) {
	var out Migration
	if err := c.write(ctx, http.MethodPost, v1Path("migrations", id, "abort"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RetryReap moves a REAPFAILED migration back to REAP: the hub tries
// again to remove the model's copy on the source controller.
func (c *Client) RetryReap(ctx context.Context, id string) (*Migration, error) {
	var out Migration
	if err := c.write(ctx, http.MethodPost, v1Path("migrations", id, "retry-reap"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// migrationList decodes the hub's migration listing: a bare array, or
// one wrapped as {"migrations": [...]} as the hub's other listings are.
type migrationList []Migration

func (l *migrationList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var wrapped struct {
			Migrations []Migration `json:"migrations"`
		}
		if err := json.Unmarshal(b, &wrapped); err != nil {
			return err
		}
		*l = wrapped.Migrations
		return nil
	}
	var ms []Migration
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*l = ms
	return nil
}
