package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/droverhq/drover/authz"
)

// DeleteModel removes a model from the index with every tuple on it (the
// model is gone from its controller).
func (s *Store) DeleteModel(ctx context.Context, id string) error {
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

// HostsModelsError is RemoveController's refusal of a controller the index
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

// RemoveController forgets a registered controller: its row, its pending
// placements and every tuple on it (its parent link and the grants on it).
// A controller the index still lists models on is refused with a
// *HostsModelsError, unless force is set: then its models are forgotten
// too, each with every tuple on it, and their names returned. Forgotten
// models keep running on the controller; the hub no longer knows them.
func (s *Store) RemoveController(ctx context.Context, id string, force bool) (forgotten []string, err error) {
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

// rememberForgotten keeps what the index knew of the models on controller
// id (those of models only, unless nil), which the hub is about to forget
// while they may still run there: AdoptModel restores them should the
// controller show them again.
func rememberForgotten(ctx context.Context, tx pgx.Tx, id string, models []string) error {
	const which = `m.controller_uuid = $1 AND ($2::uuid[] IS NULL OR m.uuid = ANY($2::uuid[]))`
	if _, err := tx.Exec(ctx, `INSERT INTO forgotten_models (uuid, controller_uuid, controller_org, controller_ca, org, name, owner, created_at, forgotten_at)
		SELECT m.uuid, m.controller_uuid, coalesce(c.org, ''), c.ca_cert, m.org, m.name, m.owner, m.created_at, now()
		FROM models m JOIN controllers c ON c.uuid = m.controller_uuid WHERE `+which+`
		ON CONFLICT (uuid) DO UPDATE SET controller_uuid = excluded.controller_uuid, controller_org = excluded.controller_org,
			controller_ca = excluded.controller_ca, org = excluded.org, name = excluded.name, owner = excluded.owner,
			created_at = excluded.created_at, forgotten_at = excluded.forgotten_at`, id, models); err != nil {
		return pgErr("remember forgotten models", err)
	}
	_, err := tx.Exec(ctx, `DELETE FROM forgotten_model_tuples WHERE model_uuid IN (SELECT m.uuid FROM models m WHERE `+which+`)`, id, models)
	if err == nil {
		_, err = tx.Exec(ctx, `INSERT INTO forgotten_model_tuples (model_uuid, "user", relation)
			SELECT m.uuid, t."user", t.relation FROM models m JOIN authz_tuples t ON t.object = 'model:' || m.uuid::text
			WHERE `+which+` AND t.relation NOT IN ($3, $4)`, id, models, string(authz.RelController), string(authz.RelOrganization))
	}
	return pgErr("remember forgotten grants", err)
}

// PruneForgottenModels deletes what the hub kept of models it forgot with
// their controller before cutoff.
func (s *Store) PruneForgottenModels(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM forgotten_models WHERE forgotten_at < $1`, cutoff)
	return tag.RowsAffected(), pgErr("prune forgotten models", err)
}

// removeTuplesOn removes every expected tuple whose object is one of
// objects or whose user is one of users, queueing their deletion.
func removeTuplesOn(ctx context.Context, tx pgx.Tx, objects, users []string) error {
	if users == nil {
		users = []string{}
	}
	rows, _ := tx.Query(ctx, `SELECT "user", relation, object FROM authz_tuples WHERE object = ANY($1) OR "user" = ANY($2)`,
		objects, users)
	ts, err := pgx.CollectRows(rows, scanTuple)
	if err != nil {
		return pgErr("tuples", err)
	}
	return removeTuples(ctx, tx, ts...)
}

// ControllerLoads returns, by controller UUID, the load placement
// weighs: the models not yet dead on it plus their machines and units, as
// the index counts them (each an agent, or a model's workers, that the
// controller runs or serves).
func (s *Store) ControllerLoads(ctx context.Context) (map[string]int, error) {
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

// ModelByName returns the model named name in org.
func (s *Store) ModelByName(ctx context.Context, org, name string) (Model, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+modelCols+` FROM `+modelFrom+` WHERE m.org = $1 AND m.name = $2`, org, name)
	m, err := pgx.CollectExactlyOneRow(rows, scanModel)
	return m, pgErr("model "+org+"/"+name, err)
}

// AdvisoryLock is a session-level advisory lock held on a dedicated
// connection (TryAdvisoryLock).
type AdvisoryLock struct {
	conn    *pgxpool.Conn
	timeout time.Duration
}

// TryAdvisoryLock takes a session-level advisory lock on a dedicated
// connection; ok is false when another session holds it. Leader-only hub
// workers run while they hold one, and check it is still held (Held):
// the lock ends with its session, which a restart of PostgreSQL, or an
// administrator's pg_terminate_backend, ends without a word to the holder.
func (s *Store) TryAdvisoryLock(ctx context.Context, key int64) (l *AdvisoryLock, ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, pgErr("advisory lock", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil || !ok {
		conn.Release()
		return nil, false, pgErr("advisory lock", err)
	}
	return &AdvisoryLock{conn: conn, timeout: s.timeout}, true, nil
}

// Held returns an error once the lock's session has ended (the lock with
// it), nil while it lasts.
func (l *AdvisoryLock) Held(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		return pgErr("the advisory lock's session", err)
	}
	return nil
}

// Release ends the lock's session, which drops the lock even where an
// unlock would fail.
func (l *AdvisoryLock) Release(ctx context.Context) {
	_ = l.conn.Conn().Close(context.WithoutCancel(ctx))
	l.conn.Release()
}
