package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Models is the model index: every model the hub knows, on which
// controller, in which organization, owned by whom, with the summary its
// controller last reported.
type Models struct{ *db }

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
	// Users is set by the caller (Models.Users), for the model's administrators.
	Users []ModelUser `json:"users,omitempty"`
}

// DetailByUUID returns one model of the index with its details.
func (s *Models) DetailByUUID(ctx context.Context, id string) (ModelDetail, error) {
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

// Insert adds a model to the index with its structural tuples (hosting
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
func (s *Models) Insert(ctx context.Context, m Model) error {
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

// UpdateSummary applies a spoke's view of a model to the index, unless
// the index already holds a newer event index. indexed reports whether the
// index holds the model at all (false: a model the hub has not seen, which
// the indexer adopts).
func (s *Models) UpdateSummary(ctx context.Context, m Model, now time.Time) (indexed bool, err error) {
	return updateSummary(ctx, s.pool, m, nil, now)
}

// Summarize is UpdateSummary writing the summary's charms too.
func (s *Models) Summarize(ctx context.Context, sum Summary, now time.Time) (indexed bool, err error) {
	return updateSummary(ctx, s.pool, sum.Model, sum.Charms, now)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// updateSummary writes m's summary, and charms unless nil.
func updateSummary(ctx context.Context, db querier, m Model, charms []Charm, now time.Time) (indexed bool, err error) {
	// One statement: the second EXISTS sees the row as it was before the
	// update, so a stale summary still counts as indexed. A row inserted
	// by a transaction still running is not seen (Models.Adopt waits for it).
	err = db.QueryRow(ctx, `WITH u AS (
			UPDATE models SET life = $2, status = $3, application_count = $4, unit_count = $5,
				machine_count = $6, event_index = $7, updated_at = $8, charms = coalesce($10, charms),
				status_since = CASE WHEN status IS DISTINCT FROM $3 THEN $8 ELSE status_since END
			WHERE uuid = $1 AND controller_uuid = $9 AND event_index <= $7 RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM u) OR EXISTS (SELECT 1 FROM models WHERE uuid = $1)`,
		m.UUID, m.Life, m.Status, m.ApplicationCount, m.UnitCount, m.MachineCount, int64(m.EventIndex), now, m.ControllerUUID, charmsArg(charms)).Scan(&indexed)
	return indexed, pgErr("model "+m.UUID, err)
}

// ByUUID returns one model of the index.
func (s *Models) ByUUID(ctx context.Context, id string) (Model, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Model{}, fmt.Errorf("model %q: %w", id, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+modelCols+` FROM `+modelFrom+` WHERE m.uuid = $1`, id)
	m, err := pgx.CollectExactlyOneRow(rows, scanModel)
	return m, pgErr("model "+id, err)
}

// Delete removes a model from the index with every tuple on it (the
// model is gone from its controller).
func (s *Models) Delete(ctx context.Context, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return fmt.Errorf("model %q: %w", id, ErrNotFound)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := removeTuplesOn(ctx, tx, []string{authz.ModelObject(id)}, nil); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM models WHERE uuid = $1`, id)
		return pgErr("model "+id, err)
	})
}

// ByName returns the model named name in org.
func (s *Models) ByName(ctx context.Context, org, name string) (Model, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+modelCols+` FROM `+modelFrom+` WHERE m.org = $1 AND m.name = $2`, org, name)
	m, err := pgx.CollectExactlyOneRow(rows, scanModel)
	return m, pgErr("model "+org+"/"+name, err)
}

// SetOwner makes identity owner the owner of model id and grants it
// administrator on the model, in one transaction. Whoever owned it before
// keeps the access they hold (revoked as any grant is); previous is their
// identity id, "" for a model nobody owned (adopted from its controller).
// Setting the current owner again changes nothing.
func (s *Models) SetOwner(ctx context.Context, id, owner string) (previous string, err error) {
	if _, err := uuid.Parse(id); err != nil {
		return "", fmt.Errorf("model %q: %w", id, ErrNotFound)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT coalesce(owner::text, '') FROM models WHERE uuid = $1 FOR UPDATE`, id).Scan(&previous); err != nil {
			return pgErr("model "+id, err)
		}
		if previous == owner {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE models SET owner = $2, updated_at = now() WHERE uuid = $1`, id, owner); err != nil {
			return pgErr("model "+id, err)
		}
		return addTuples(ctx, tx, authz.Tuple{User: authz.UserObject(owner), Relation: authz.Administrator, Object: authz.ModelObject(id)})
	})
	return previous, err
}
