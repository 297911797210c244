package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Controllers are the registered controllers (spokes): their addresses,
// CA, health and position in their event stream.
type Controllers struct{ *db }

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
	// Deprecated controllers take no new models (Controllers.SetDeprecated).
	Deprecated bool `json:"deprecated,omitempty"`
	// Version is the row's index version (migrations/0022_index_versions.sql).
	Version int64 `json:"-"`
}

const controllerCols = `uuid, name, coalesce(org, ''), region, cloud, api_addresses, ca_cert, status, health, event_index, last_seen, created_at, deprecated, event_mark, version`

func scanController(r pgx.CollectableRow) (Controller, error) {
	var c Controller
	var id uuid.UUID
	var idx int64
	err := r.Scan(&id, &c.Name, &c.Org, &c.Region, &c.Cloud, &c.APIAddresses, &c.CACert, &c.Status, &c.Health, &idx, &c.LastSeen, &c.CreatedAt, &c.Deprecated, &c.EventMark, &c.Version)
	c.UUID, c.EventIndex = id.String(), uint64(idx)
	return c, err
}

// SetDeprecated marks controller id as taking no new models, or
// as taking them again.
func (s *Controllers) SetDeprecated(ctx context.Context, id string, deprecated bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE controllers SET deprecated = $2 WHERE uuid = $1`, id, deprecated)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return pgErr("controller "+id, err)
}

// Upsert registers a controller or updates its addresses, CA,
// region and cloud. The parent link (hub or organization) is written on
// creation and never changes.
func (s *Controllers) Upsert(ctx context.Context, c Controller) error {
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

// SetAddresses records the addresses a controller gave for its
// nodes (its event stream names them after enable-ha), reporting whether
// they changed. None leaves the recorded ones: a controller is never made
// unreachable by its own report.
func (s *Controllers) SetAddresses(ctx context.Context, uuid string, addrs []string) (bool, error) {
	if len(addrs) == 0 {
		return false, nil
	}
	tag, err := s.pool.Exec(ctx, `UPDATE controllers SET api_addresses = $2
		WHERE uuid = $1 AND api_addresses IS DISTINCT FROM $2`, uuid, addrs)
	return err == nil && tag.RowsAffected() > 0, pgErr("controller "+uuid, err)
}

// SetHealth records a health observation from the hub's
// subscription to the spoke: seen is when the controller was last heard
// from (zero: it was not, and the time it last was stays). The event index
// only grows (store.Controllers.Rewind sets it back); the mark naming it is
// recorded with an index at least as high as the one held.
func (s *Controllers) SetHealth(ctx context.Context, uuid, status string, health map[string]any, eventIndex uint64, eventMark string, seen time.Time) error {
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

// ByName returns one controller.
func (s *Controllers) ByName(ctx context.Context, name string) (Controller, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+controllerCols+` FROM controllers WHERE name = $1`, name)
	c, err := pgx.CollectExactlyOneRow(rows, scanController)
	return c, pgErr("controller "+name, err)
}

// ByUUID returns one controller.
func (s *Controllers) ByUUID(ctx context.Context, id string) (Controller, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Controller{}, fmt.Errorf("controller %q: %w", id, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+controllerCols+` FROM controllers WHERE uuid = $1`, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanController)
	return c, pgErr("controller "+id, err)
}

// List returns the controllers among uuids, by name in byte
// order; all controllers when all is true.
func (s *Controllers) List(ctx context.Context, uuids []string, all bool) ([]Controller, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+controllerCols+` FROM controllers
		WHERE $2 OR uuid = ANY($1::text[]::uuid[]) ORDER BY name`, uuids, all)
	if err != nil {
		return nil, pgErr("list controllers", err)
	}
	return pgx.CollectRows(rows, scanController)
}

// HostsModelsError is Controllers.Remove's refusal of a controller the index
// still lists models on.
type HostsModelsError struct {
	Controller string
	Models     []string // OWNER/NAME (NAME for a model with no owner), sorted
}

func (e *HostsModelsError) Error() string {
	shown := e.Models
	if len(shown) > 5 {
		shown = shown[:5]
	}
	list := strings.Join(shown, ", ")
	if len(e.Models) > len(shown) {
		list += fmt.Sprintf(" and %d more", len(e.Models)-len(shown))
	}
	noun := "models"
	if len(e.Models) == 1 {
		noun = "model"
	}
	return fmt.Sprintf("controller %s still hosts %d %s (%s)", e.Controller, len(e.Models), noun, list)
}

// Remove forgets a registered controller: its row, its pending
// placements and every tuple on it (its parent link and the grants on it).
// A controller the index still lists models on is refused with a
// *HostsModelsError, unless force is set: then its models are forgotten
// too, each with every tuple on it, and their names returned. Forgotten
// models keep running on the controller; the hub no longer knows them.
func (s *Controllers) Remove(ctx context.Context, id string, force bool) (forgotten []string, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var name string
		// The row lock holds off a model being indexed on it meanwhile.
		if err := tx.QueryRow(ctx, `SELECT name FROM controllers WHERE uuid = $1 FOR UPDATE`, id).Scan(&name); err != nil {
			return pgErr("controller "+id, err)
		}
		objects := []string{authz.ControllerObject(id)}
		forgotten = nil
		rows, _ := tx.Query(ctx, `SELECT uuid::text, concat_ws('/', nullif(owner_name, ''), name) FROM models WHERE controller_uuid = $1 ORDER BY 2`, id)
		var uuid, ref string
		if _, err := pgx.ForEachRow(rows, []any{&uuid, &ref}, func() error {
			objects = append(objects, authz.ModelObject(uuid))
			forgotten = append(forgotten, ref)
			return nil
		}); err != nil {
			return pgErr("controller models", err)
		}
		if len(forgotten) > 0 && !force {
			return &HostsModelsError{Controller: name, Models: forgotten}
		}
		if err := rememberForgotten(ctx, tx, id, nil); err != nil {
			return err
		}
		if err := removeTuplesOn(ctx, tx, objects, []string{authz.ControllerObject(id)}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM models WHERE controller_uuid = $1`, id); err != nil {
			return pgErr("controller models", err)
		}
		_, err := tx.Exec(ctx, `DELETE FROM controllers WHERE uuid = $1`, id)
		return pgErr("controller "+name, err)
	})
	return forgotten, err
}

// Loads returns, by controller UUID, the load placement
// weighs: the models not yet dead on it plus their machines and units, as
// the index counts them (each an agent, or a model's workers, that the
// controller runs or serves).
func (s *Controllers) Loads(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT controller_uuid::text, count(*) + sum(machine_count) + sum(unit_count)
		FROM models WHERE life <> 'dead' GROUP BY 1`)
	if err != nil {
		return nil, pgErr("controller loads", err)
	}
	out := map[string]int{}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, pgErr("controller loads", err)
		}
		out[id] = n
	}
	return out, pgErr("controller loads", rows.Err())
}
