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
	// EventMark names the controller's log entry at EventIndex in its
	// history ("": unknown).
	EventMark string     `json:"-"`
	LastSeen  *time.Time `json:"last-seen,omitempty"`
	CreatedAt time.Time  `json:"created-at"`
	// Deprecated controllers take no new models (SetControllerDeprecated).
	Deprecated bool `json:"deprecated,omitempty"`
}

const controllerCols = `uuid, name, coalesce(org, ''), region, cloud, api_addresses, ca_cert, status, health, event_index, last_seen, created_at, deprecated, event_mark`

func scanController(r pgx.CollectableRow) (Controller, error) {
	var c Controller
	var id uuid.UUID
	var idx int64
	err := r.Scan(&id, &c.Name, &c.Org, &c.Region, &c.Cloud, &c.APIAddresses, &c.CACert, &c.Status, &c.Health, &idx, &c.LastSeen, &c.CreatedAt, &c.Deprecated, &c.EventMark)
	c.UUID, c.EventIndex = id.String(), uint64(idx)
	return c, err
}

// SetControllerDeprecated marks controller id as taking no new models, or
// as taking them again.
func (s *Store) SetControllerDeprecated(ctx context.Context, id string, deprecated bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE controllers SET deprecated = $2 WHERE uuid = $1`, id, deprecated)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return pgErr("controller "+id, err)
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

// SetControllerAddresses records the addresses a controller gave for its
// nodes (its event stream names them after enable-ha), reporting whether
// they changed. None leaves the recorded ones: a controller is never made
// unreachable by its own report.
func (s *Store) SetControllerAddresses(ctx context.Context, uuid string, addrs []string) (bool, error) {
	if len(addrs) == 0 {
		return false, nil
	}
	tag, err := s.pool.Exec(ctx, `UPDATE controllers SET api_addresses = $2
		WHERE uuid = $1 AND api_addresses IS DISTINCT FROM $2`, uuid, addrs)
	return err == nil && tag.RowsAffected() > 0, pgErr("controller "+uuid, err)
}

// SetControllerHealth records a health observation from the hub's
// subscription to the spoke: seen is when the controller was last heard
// from (zero: it was not, and the time it last was stays). The event index
// only grows (store.RewindController sets it back); the mark naming it is
// recorded with an index at least as high as the one held.
func (s *Store) SetControllerHealth(ctx context.Context, uuid, status string, health map[string]any, eventIndex uint64, eventMark string, seen time.Time) error {
	if health == nil {
		health = map[string]any{}
	}
	var at *time.Time
	if !seen.IsZero() {
		at = &seen
	}
	tag, err := s.pool.Exec(ctx, `UPDATE controllers SET status = $2, health = $3, event_index = greatest(event_index, $4),
		event_mark = CASE WHEN $4 > 0 AND $4 >= event_index THEN $6 ELSE event_mark END,
		last_seen = coalesce($5, last_seen) WHERE uuid = $1`, uuid, status, health, int64(eventIndex), at, eventMark)
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

// ListControllers returns the controllers among uuids, by name in byte
// order; all controllers when all is true.
func (s *Store) ListControllers(ctx context.Context, uuids []string, all bool) ([]Controller, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+controllerCols+` FROM controllers
		WHERE $2 OR uuid = ANY($1::text[]::uuid[]) ORDER BY name`, uuids, all)
	if err != nil {
		return nil, pgErr("list controllers", err)
	}
	return pgx.CollectRows(rows, scanController)
}

// Model is one entry of the model index. Owner and ControllerUUID are
// what is stored; OwnerName, Controller, Cloud and Region are read from the
// owner's identity and the controller, so a listing needs nothing else.
type Model struct {
	UUID             string    `json:"uuid"`
	Name             string    `json:"name"`
	Org              string    `json:"org"`
	OwnerName        string    `json:"owner,omitempty"`    // Identity.Name
	Owner            string    `json:"owner-id,omitempty"` // identity id
	Controller       string    `json:"controller,omitempty"`
	ControllerStatus string    `json:"controller-status,omitempty"` // "disconnected" when the hub lost it
	ControllerUUID   string    `json:"controller-uuid"`
	Cloud            string    `json:"cloud,omitempty"`
	Region           string    `json:"region,omitempty"`
	Life             string    `json:"life"`
	Status           string    `json:"status,omitempty"`
	ApplicationCount int       `json:"application-count"`
	UnitCount        int       `json:"unit-count"`
	MachineCount     int       `json:"machine-count"`
	EventIndex       uint64    `json:"event-index"`
	CreatedAt        time.Time `json:"created-at"`
	UpdatedAt        time.Time `json:"updated-at"`
}

// modelCols, from modelFrom, are the columns of Model in its order.
const (
	modelCols = `m.uuid, m.name, m.org, m.owner_name, coalesce(m.owner::text, ''), c.name,
	CASE WHEN c.status = 'disconnected' THEN c.status ELSE '' END, m.controller_uuid,
	c.cloud, c.region, m.life, m.status, m.application_count, m.unit_count, m.machine_count, m.event_index,
	m.created_at, m.updated_at`
	// models.owner_name is the owner's Identity.Name, or '' for no owner
	// (migrations/0006_owner_name.sql).
	modelFrom = `models m JOIN controllers c ON c.uuid = m.controller_uuid`
)

func scanModel(r pgx.CollectableRow) (Model, error) {
	var m Model
	var id, cid [16]byte // scanned binary; uuid.UUID would take the text path
	var idx int64
	err := r.Scan(modelDest(&m, &id, &cid, &idx)...)
	m.UUID, m.ControllerUUID, m.EventIndex = uuid.UUID(id).String(), uuid.UUID(cid).String(), uint64(idx)
	return m, err
}

// modelDest is where the columns of modelCols are scanned to.
func modelDest(m *Model, id, cid *[16]byte, idx *int64) []any {
	return []any{id, &m.Name, &m.Org, &m.OwnerName, &m.Owner, &m.Controller, &m.ControllerStatus, cid, &m.Cloud, &m.Region, &m.Life, &m.Status,
		&m.ApplicationCount, &m.UnitCount, &m.MachineCount, idx, &m.CreatedAt, &m.UpdatedAt}
}

// ModelDetail is a model of the index with what only the single-model
// route answers: when the hub saw its status change (migration 0005; nil
// for a model indexed before the hub kept it).
type ModelDetail struct {
	Model
	StatusSince *time.Time `json:"status-since,omitempty"`
	// Users is set by the caller (ModelUsers), for the model's administrators.
	Users []ModelUser `json:"users,omitempty"`
}

// ModelDetailByUUID returns one model of the index with its details.
func (s *Store) ModelDetailByUUID(ctx context.Context, id string) (ModelDetail, error) {
	if _, err := uuid.Parse(id); err != nil {
		return ModelDetail{}, fmt.Errorf("model %q: %w", id, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+modelCols+`, m.status_since FROM `+modelFrom+` WHERE m.uuid = $1`, id)
	d, err := pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (ModelDetail, error) {
		var d ModelDetail
		var id, cid [16]byte
		var idx int64
		err := r.Scan(append(modelDest(&d.Model, &id, &cid, &idx), &d.StatusSince)...)
		d.UUID, d.ControllerUUID, d.EventIndex = uuid.UUID(id).String(), uuid.UUID(cid).String(), uint64(idx)
		return d, err
	})
	return d, pgErr("model "+id, err)
}

// InsertModel adds a model to the index with its structural tuples (hosting
// controller, owning organization) and makes the owner its administrator,
// as Juju does.
//
// A row the indexer adopted for the same model on the same controller
// (owner NULL: the controller's event arrived before the hub's own
// placement inserted the row) is taken over instead: name, organization
// and owner become the given ones, the adopted organization's tuple is
// removed, and the summary the indexer applied is kept. Any other existing
// row with that UUID, or the name taken in the organization, is
// ErrAlreadyExists.
func (s *Store) InsertModel(ctx context.Context, m Model) error {
	if m.Life == "" {
		m.Life = "alive"
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var owner *string
		if m.Owner != "" {
			owner = &m.Owner
		}
		// The conflict arbiter is the UUID only: a name taken by another
		// model stays a unique violation.
		tag, err := tx.Exec(ctx, `INSERT INTO models (uuid, name, org, owner, controller_uuid, life, status,
			application_count, unit_count, machine_count, event_index)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, org = excluded.org, owner = excluded.owner,
				updated_at = now()
			WHERE models.owner IS NULL AND excluded.owner IS NOT NULL
				AND models.controller_uuid = excluded.controller_uuid`, m.UUID, m.Name, m.Org, owner, m.ControllerUUID,
			m.Life, m.Status, m.ApplicationCount, m.UnitCount, m.MachineCount, int64(m.EventIndex))
		if err != nil {
			return pgErr("model "+m.Name, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("model %s: %w", m.UUID, ErrAlreadyExists)
		}
		obj := authz.ModelObject(m.UUID)
		// After a takeover, the organization that adopted the model loses it.
		rows, _ := tx.Query(ctx, `SELECT "user" FROM authz_tuples WHERE object = $1 AND relation = $2 AND "user" <> $3`,
			obj, string(authz.RelOrganization), authz.OrgObject(m.Org))
		stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return pgErr("model tuples", err)
		}
		for _, u := range stale {
			if err := removeTuples(ctx, tx, authz.Tuple{User: u, Relation: authz.RelOrganization, Object: obj}); err != nil {
				return err
			}
		}
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
// the index already holds a newer event index. indexed reports whether the
// index holds the model at all (false: a model the hub has not seen, which
// the indexer adopts).
func (s *Store) UpdateModelSummary(ctx context.Context, m Model, now time.Time) (indexed bool, err error) {
	return updateSummary(ctx, s.pool, m, now)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func updateSummary(ctx context.Context, db querier, m Model, now time.Time) (indexed bool, err error) {
	// One statement: the second EXISTS sees the row as it was before the
	// update, so a stale summary still counts as indexed. A row inserted
	// by a transaction still running is not seen (AdoptModel waits for it).
	err = db.QueryRow(ctx, `WITH u AS (
			UPDATE models SET life = $2, status = $3, application_count = $4, unit_count = $5,
				machine_count = $6, event_index = $7, updated_at = $8,
				status_since = CASE WHEN status IS DISTINCT FROM $3 THEN $8 ELSE status_since END
			WHERE uuid = $1 AND controller_uuid = $9 AND event_index <= $7 RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM u) OR EXISTS (SELECT 1 FROM models WHERE uuid = $1)`,
		m.UUID, m.Life, m.Status, m.ApplicationCount, m.UnitCount, m.MachineCount, int64(m.EventIndex), now, m.ControllerUUID).Scan(&indexed)
	return indexed, pgErr("model "+m.UUID, err)
}

// ModelByUUID returns one model of the index.
func (s *Store) ModelByUUID(ctx context.Context, id string) (Model, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Model{}, fmt.Errorf("model %q: %w", id, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+modelCols+` FROM `+modelFrom+` WHERE m.uuid = $1`, id)
	m, err := pgx.CollectExactlyOneRow(rows, scanModel)
	return m, pgErr("model "+id, err)
}
