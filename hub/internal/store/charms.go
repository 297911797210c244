package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Charm is one application's charm in a model, as its controller's
// summary gives it (api.CharmInUse), kept in models.charms.
type Charm struct {
	Application string `json:"application"`
	Charm       string `json:"charm"`
	Revision    int    `json:"revision"`
	SHA256      string `json:"sha256"`
	Units       int    `json:"units"`
}

// Summary is a model's summary with its charms, as its controller's
// event frames give it. The charms are apart from Model: a listing does
// not carry them.
type Summary struct {
	Model
	Charms []Charm
}

// charmsArg is cs as a jsonb argument: NULL for nil, which the writes
// read as "leave the charms as they are".
func charmsArg(cs []Charm) any {
	if cs == nil {
		return nil
	}
	return cs
}

// CharmPlacement is one application's charm and where it runs.
type CharmPlacement struct {
	Org, Controller, ControllerUUID, Region, ModelUUID, Model string
	Charm
}

// CharmScope chooses the models of Models.ListCharms: every one (All), or
// those of Models; within organization Org when set.
type CharmScope struct {
	All    bool
	Models []ModelKey
	Org    string
}

// ListCharms returns the charms of the models in scope, one an
// application, by charm name, then organization, controller, model and
// application.
func (s *Models) ListCharms(ctx context.Context, scope CharmScope) ([]CharmPlacement, error) {
	ids := make([]uuid.UUID, len(scope.Models))
	for i, k := range scope.Models {
		ids[i] = k.UUID
	}
	rows, err := s.pool.Query(ctx, `SELECT m.org, c.name, m.controller_uuid::text, c.region, m.uuid::text, m.name,
			ch.application, ch.charm, ch.revision, ch.sha256, ch.units
		FROM models m JOIN controllers c ON c.uuid = m.controller_uuid,
			jsonb_to_recordset(m.charms) AS ch(application text, charm text, revision int, sha256 text, units int)
		WHERE ($1 OR m.uuid = ANY($2::uuid[])) AND ($3 = '' OR m.org = $3)
		ORDER BY ch.charm, m.org, c.name, m.name, ch.application`, scope.All, ids, scope.Org)
	if err != nil {
		return nil, pgErr("list charms", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CharmPlacement, error) {
		var p CharmPlacement
		var app, charm, sha *string
		var rev, units *int
		err := r.Scan(&p.Org, &p.Controller, &p.ControllerUUID, &p.Region, &p.ModelUUID, &p.Model, &app, &charm, &rev, &sha, &units)
		p.Application, p.Charm.Charm, p.SHA256 = deref(app), deref(charm), deref(sha)
		p.Revision, p.Units = deref(rev), deref(units)
		return p, err
	})
	return out, pgErr("list charms", err)
}

// deref is *p, or the zero value for nil (a field a summary left out).
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
