package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Controller is a registered spoke.
type Controller struct {
	UUID         string         `json:"uuid"`
	Name         string         `json:"name"`
	Org          string         `json:"org,omitempty"` // "" for a shared controller
	Region       string         `json:"region,omitempty"`
	Cloud        string         `json:"cloud,omitempty"`
	APIAddresses []string       `json:"api-addresses"`
	CACert       string         `json:"ca-cert,omitempty"`
	Status       string         `json:"status"`
	Health       map[string]any `json:"health,omitempty"`
	EventIndex   uint64         `json:"event-index"`
	LastSeen     *time.Time     `json:"last-seen,omitempty"`
	CreatedAt    time.Time      `json:"created-at"`
}

const controllerCols = `uuid, name, coalesce(org, ''), region, cloud, api_addresses, ca_cert, status, health, event_index, last_seen, created_at`

func scanController(r pgx.CollectableRow) (Controller, error) {
	var c Controller
	var id uuid.UUID
	var idx int64
	err := r.Scan(&id, &c.Name, &c.Org, &c.Region, &c.Cloud, &c.APIAddresses, &c.CACert, &c.Status, &c.Health, &idx, &c.LastSeen, &c.CreatedAt)
	c.UUID, c.EventIndex = id.String(), uint64(idx)
	return c, err
}

// UpsertController registers a controller or updates its addresses, CA,
// region and cloud. The parent link (hub or organization) is written on
// creation and never changes.
func (s *Store) UpsertController(ctx context.Context, c Controller) error {
	if c.APIAddresses == nil {
		c.APIAddresses = []string{}
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var org *string
		if c.Org != "" {
			org = &c.Org
		}
		var inserted bool
		err := tx.QueryRow(ctx, `INSERT INTO controllers (uuid, name, org, region, cloud, api_addresses, ca_cert, status)
			VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce(nullif($8, ''), 'unknown'))
			ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, region = excluded.region, cloud = excluded.cloud,
			api_addresses = excluded.api_addresses, ca_cert = excluded.ca_cert
			RETURNING (xmax = 0)`, c.UUID, c.Name, org, c.Region, c.Cloud, c.APIAddresses, c.CACert, c.Status).Scan(&inserted)
		if err != nil {
			return pgErr("controller "+c.Name, err)
		}
		if !inserted {
			return nil
		}
		link := authz.Tuple{User: authz.HubObject(), Relation: authz.RelHub, Object: authz.ControllerObject(c.UUID)}
		if c.Org != "" {
			link = authz.Tuple{User: authz.OrgObject(c.Org), Relation: authz.RelOrganization, Object: authz.ControllerObject(c.UUID)}
		}
		return addTuples(ctx, tx, link)
	})
}

// SetControllerHealth records a health observation from the hub's
// subscription to the spoke.
func (s *Store) SetControllerHealth(ctx context.Context, uuid, status string, health map[string]any, eventIndex uint64, seen time.Time) error {
	if health == nil {
		health = map[string]any{}
	}
	tag, err := s.pool.Exec(ctx, `UPDATE controllers SET status = $2, health = $3, event_index = greatest(event_index, $4), last_seen = $5
		WHERE uuid = $1`, uuid, status, health, int64(eventIndex), seen)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return pgErr("controller "+uuid, err)
}

// ControllerByName returns one controller.
func (s *Store) ControllerByName(ctx context.Context, name string) (Controller, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+controllerCols+` FROM controllers WHERE name = $1`, name)
	c, err := pgx.CollectExactlyOneRow(rows, scanController)
	return c, pgErr("controller "+name, err)
}

// ControllerByUUID returns one controller.
func (s *Store) ControllerByUUID(ctx context.Context, id string) (Controller, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Controller{}, fmt.Errorf("controller %q: %w", id, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+controllerCols+` FROM controllers WHERE uuid = $1`, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanController)
	return c, pgErr("controller "+id, err)
}

// ListControllers returns the controllers among uuids, by name; all
// controllers when all is true.
func (s *Store) ListControllers(ctx context.Context, uuids []string, all bool) ([]Controller, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+controllerCols+` FROM controllers
		WHERE $2 OR uuid = ANY($1::text[]::uuid[]) ORDER BY name`, uuids, all)
	if err != nil {
		return nil, pgErr("list controllers", err)
	}
	return pgx.CollectRows(rows, scanController)
}

// Model is one entry of the model index.
type Model struct {
	UUID             string    `json:"uuid"`
	Name             string    `json:"name"`
	Org              string    `json:"org"`
	Owner            string    `json:"owner,omitempty"` // identity id
	ControllerUUID   string    `json:"controller-uuid"`
	Life             string    `json:"life"`
	Status           string    `json:"status,omitempty"`
	ApplicationCount int       `json:"application-count"`
	UnitCount        int       `json:"unit-count"`
	MachineCount     int       `json:"machine-count"`
	EventIndex       uint64    `json:"event-index"`
	CreatedAt        time.Time `json:"created-at"`
	UpdatedAt        time.Time `json:"updated-at"`
}

const modelCols = `uuid, name, org, coalesce(owner::text, ''), controller_uuid, life, status,
	application_count, unit_count, machine_count, event_index, created_at, updated_at`

func scanModel(r pgx.CollectableRow) (Model, error) {
	var m Model
	var id, cid uuid.UUID
	var idx int64
	err := r.Scan(&id, &m.Name, &m.Org, &m.Owner, &cid, &m.Life, &m.Status,
		&m.ApplicationCount, &m.UnitCount, &m.MachineCount, &idx, &m.CreatedAt, &m.UpdatedAt)
	m.UUID, m.ControllerUUID, m.EventIndex = id.String(), cid.String(), uint64(idx)
	return m, err
}

// InsertModel adds a model to the index with its structural tuples (hosting
// controller, owning organization) and makes the owner its administrator,
// as Juju does.
func (s *Store) InsertModel(ctx context.Context, m Model) error {
	if m.Life == "" {
		m.Life = "alive"
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var owner *string
		if m.Owner != "" {
			owner = &m.Owner
		}
		_, err := tx.Exec(ctx, `INSERT INTO models (uuid, name, org, owner, controller_uuid, life, status,
			application_count, unit_count, machine_count, event_index)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, m.UUID, m.Name, m.Org, owner, m.ControllerUUID,
			m.Life, m.Status, m.ApplicationCount, m.UnitCount, m.MachineCount, int64(m.EventIndex))
		if err != nil {
			return pgErr("model "+m.Name, err)
		}
		obj := authz.ModelObject(m.UUID)
		ts := []authz.Tuple{
			{User: authz.ControllerObject(m.ControllerUUID), Relation: authz.RelController, Object: obj},
			{User: authz.OrgObject(m.Org), Relation: authz.RelOrganization, Object: obj},
		}
		if m.Owner != "" {
			ts = append(ts, authz.Tuple{User: authz.UserObject(m.Owner), Relation: authz.Administrator, Object: obj})
		}
		return addTuples(ctx, tx, ts...)
	})
}

// UpdateModelSummary applies a spoke's view of a model to the index, unless
// the index already holds a newer event index.
func (s *Store) UpdateModelSummary(ctx context.Context, m Model, now time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE models SET life = $2, status = $3, application_count = $4, unit_count = $5,
		machine_count = $6, event_index = $7, updated_at = $8 WHERE uuid = $1 AND event_index <= $7`,
		m.UUID, m.Life, m.Status, m.ApplicationCount, m.UnitCount, m.MachineCount, int64(m.EventIndex), now)
	return pgErr("model "+m.UUID, err)
}

// ModelByUUID returns one model of the index.
func (s *Store) ModelByUUID(ctx context.Context, id string) (Model, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Model{}, fmt.Errorf("model %q: %w", id, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+modelCols+` FROM models WHERE uuid = $1`, id)
	m, err := pgx.CollectExactlyOneRow(rows, scanModel)
	return m, pgErr("model "+id, err)
}

// ListModels returns the indexed models among uuids, sorted by org and name.
func (s *Store) ListModels(ctx context.Context, uuids []string) ([]Model, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+modelCols+` FROM models WHERE uuid = ANY($1::text[]::uuid[]) ORDER BY org, name`, uuids)
	if err != nil {
		return nil, pgErr("list models", err)
	}
	return pgx.CollectRows(rows, scanModel)
}
