package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Organizations are the tenants. An organization is made when first
// needed (a login, a service account, an adopted model), linked to the hub.
type Organizations struct{ *db }

// Organization is a tenant.
type Organization struct {
	Name        string    `json:"name"`
	DisplayName string    `json:"display-name,omitempty"`
	CreatedAt   time.Time `json:"created-at"`
}

// ensureOrg creates org (linked to the hub) unless it exists.
func ensureOrg(ctx context.Context, tx pgx.Tx, name string) error {
	tag, err := tx.Exec(ctx, `INSERT INTO organizations (name) VALUES ($1) ON CONFLICT DO NOTHING`, name)
	if err != nil {
		return pgErr("create organization "+name, err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	return addTuples(ctx, tx, authz.Tuple{User: authz.HubObject(), Relation: authz.RelHub, Object: authz.OrgObject(name)})
}

// Ensure creates the organization if it does not exist.
func (s *Organizations) Ensure(ctx context.Context, name string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return ensureOrg(ctx, tx, name) })
}

// ByName returns one organization.
func (s *Organizations) ByName(ctx context.Context, name string) (Organization, error) {
	var o Organization
	err := s.pool.QueryRow(ctx, `SELECT name, display_name, created_at FROM organizations WHERE name = $1`, name).
		Scan(&o.Name, &o.DisplayName, &o.CreatedAt)
	return o, pgErr("organization "+name, err)
}

// List returns the named organizations that exist, in byte
// order.
func (s *Organizations) List(ctx context.Context, names []string) ([]Organization, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, display_name, created_at FROM organizations
		WHERE name = ANY($1) ORDER BY name`, names)
	if err != nil {
		return nil, pgErr("list organizations", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Organization, error) {
		var o Organization
		return o, r.Scan(&o.Name, &o.DisplayName, &o.CreatedAt)
	})
}
