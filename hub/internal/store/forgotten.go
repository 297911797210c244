package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// rememberForgotten keeps what the index knew of the models on controller
// id (those of models only, unless nil), which the hub is about to forget
// while they may still run there: Models.Adopt restores them should the
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

// PruneForgotten deletes what the hub kept of models it forgot with
// their controller before cutoff.
func (s *Models) PruneForgotten(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM forgotten_models WHERE forgotten_at < $1`, cutoff)
	return tag.RowsAffected(), pgErr("prune forgotten models", err)
}

// forgottenGrants are the tuples kept of a forgotten model (its owner's,
// its grants) whose user still exists: an identity or group removed since
// gets nothing back.
func forgottenGrants(ctx context.Context, tx pgx.Tx, model string) ([]authz.Tuple, error) {
	rows, _ := tx.Query(ctx, `SELECT t."user", t.relation FROM forgotten_model_tuples t WHERE t.model_uuid = $1 AND (
			(t."user" LIKE 'user:%' AND EXISTS (SELECT 1 FROM identities i WHERE 'user:' || i.id::text = t."user"))
			OR (t."user" LIKE 'group:%' AND EXISTS (SELECT 1 FROM groups g WHERE 'group:' || g.id::text || '#member' = t."user"))
			OR (t."user" NOT LIKE 'user:%' AND t."user" NOT LIKE 'group:%'))
		ORDER BY 1, 2`, model)
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (authz.Tuple, error) {
		t := authz.Tuple{Object: authz.ModelObject(model)}
		var rel string
		err := r.Scan(&t.User, &rel)
		t.Relation = authz.Relation(rel)
		return t, err
	})
	return ts, pgErr("forgotten grants", err)
}

// forgottenModel is what the hub kept of a model it forgot with its
// controller (rememberForgotten).
type forgottenModel struct {
	org, name string
	owner     *string
	created   time.Time
}

// forgottenOn returns what the hub kept of model m when it forgot it with
// m's controller (remove-controller --force, or a reset that no longer
// listed it), nil when it kept nothing. A model that comes back comes back
// as it was: organization, name, owner, grants; unless its controller now
// belongs to another organization, or has another CA: then it is another
// server claiming the UUID (free since the removal), which must not be
// handed the model's people and what they send it.
func forgottenOn(ctx context.Context, tx pgx.Tx, m Model) (*forgottenModel, error) {
	var f forgottenModel
	err := tx.QueryRow(ctx, `SELECT f.org, f.name, f.owner::text, f.created_at FROM forgotten_models f
		JOIN controllers c ON c.uuid = f.controller_uuid
		WHERE f.uuid = $1 AND f.controller_uuid = $2 AND coalesce(c.org, '') = f.controller_org AND c.ca_cert = f.controller_ca`,
		m.UUID, m.ControllerUUID).Scan(&f.org, &f.name, &f.owner, &f.created)
	switch {
	case err == nil:
		return &f, nil
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	}
	return nil, pgErr("forgotten model", err)
}
