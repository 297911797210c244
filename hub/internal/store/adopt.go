package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Adoption is a model the hub found on a controller's event stream without
// having created it (it was added on the controller directly).
type Adoption struct {
	// Model carries the UUID, the controller's name for the model, the
	// hosting controller, the summary, the frame's event index and when the
	// controller created the model (zero: now). Org is
	// the owning organization; Owner is ignored (an adopted model has none).
	Model Model
	// ControllerName is used for the first fallback name.
	ControllerName string
	// SpokeOwner is the controller's local owner of the model, recorded in
	// the audit entry only: it is not a hub identity.
	SpokeOwner string
	// Charms are the model's charms from its summary (nil: none known).
	Charms []Charm
	At     time.Time
}

// AdoptionNames are the names an adopted model may take in its
// organization, in order: the controller's name for it, then
// NAME-CONTROLLER, then NAME-<first 8 hex digits of its UUID>. The first
// one free in the organization wins.
func AdoptionNames(name, controllerName, modelUUID string) []string {
	short := modelUUID
	if len(short) > 8 {
		short = short[:8]
	}
	return []string{name, name + "-" + controllerName, name + "-" + short}
}

// ClaimPlacement records, for ttl, that the hub is creating the model name
// owned by spokeOwner (the controller's owner: the caller's email) on a
// controller: Models.Adopt leaves that model to the placement, so its
// controller's event, if it comes first, does not hand it to another
// organization even briefly. Models.ReleasePlacement ends the claim once the
// model is indexed (or the placement failed).
func (s *Models) ClaimPlacement(ctx context.Context, controllerUUID, name, spokeOwner string, ttl time.Duration) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO placements (controller_uuid, name, spoke_owner, expires_at)
		VALUES ($1, $2, $3, now() + make_interval(secs => $4))
		ON CONFLICT (controller_uuid, name, spoke_owner) DO UPDATE SET expires_at = excluded.expires_at`,
		controllerUUID, name, spokeOwner, ttl.Seconds())
	return pgErr("claim placement "+name, err)
}

// ClaimName reserves name in org for ttl, for one add-model: false
// when another holds it (an unexpired claim), and the caller must not
// create the model. Models.ReleaseName ends the claim.
func (s *Models) ClaimName(ctx context.Context, org, name string, ttl time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO model_name_claims (org, name, expires_at)
		VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (org, name) DO UPDATE SET expires_at = excluded.expires_at
		WHERE model_name_claims.expires_at < now()`, org, name, ttl.Seconds())
	if err != nil {
		return false, pgErr("claim model name "+name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RenewName extends a claim of Models.ClaimName to ttl from now (the
// add-model holding it is still running).
func (s *Models) RenewName(ctx context.Context, org, name string, ttl time.Duration) error {
	_, err := s.pool.Exec(ctx, `UPDATE model_name_claims SET expires_at = now() + make_interval(secs => $3)
		WHERE org = $1 AND name = $2`, org, name, ttl.Seconds())
	return pgErr("renew model name "+name, err)
}

// ReleaseName ends a claim of Models.ClaimName.
func (s *Models) ReleaseName(ctx context.Context, org, name string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM model_name_claims WHERE org = $1 AND name = $2`, org, name)
	return pgErr("release model name "+name, err)
}

// ReleasePlacement ends a claim, and any claim that has expired.
func (s *Models) ReleasePlacement(ctx context.Context, controllerUUID, name, spokeOwner string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM placements WHERE (controller_uuid = $1 AND name = $2 AND spoke_owner = $3)
		OR expires_at < now()`, controllerUUID, name, spokeOwner)
	return pgErr("release placement "+name, err)
}

// Adopt indexes a model found on a controller: owner NULL, the
// structural tuples only (hosting controller, owning organization: their
// administrators see it, nobody else), and one audit entry (actor "hub",
// operation "model adopted"), all in one transaction. Creating the
// organization if it does not exist yet. A model the hub forgot with this
// controller (Controllers.Remove with force) is restored instead: its
// organization, name, owner, creation time and grants (of identities and
// groups that still exist), details "restored"; unless the controller
// has changed organization or CA certificate since.
//
// It returns the indexed model and true, or false when the model was
// already indexed or a placement claims it (Models.ClaimPlacement): then
// only its summary is applied, as Models.UpdateSummary would (adoption is
// idempotent, and the owner, name and grants of a row inserted by the
// hub's own placement are never touched). When every candidate name
// (AdoptionNames) is taken in the organization it fails with
// ErrAlreadyExists and changes nothing.
func (s *Models) Adopt(ctx context.Context, a Adoption) (Model, bool, error) {
	m := a.Model
	m.Owner = ""
	if m.Life == "" {
		m.Life = "alive"
	}
	var adopted bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		m, adopted, err = adoptIn(ctx, tx, a, m)
		return err
	})
	if err != nil || !adopted {
		return Model{}, false, err
	}
	return m, true, nil
}

// adoptIn is Adopt's transaction; m is the model as its controller
// reports it, with no owner. It returns the indexed model, and false when
// it was not indexed (a placement's, or indexed already).
func adoptIn(ctx context.Context, tx pgx.Tx, a Adoption, m Model) (Model, bool, error) {
	names := AdoptionNames(m.Name, a.ControllerName, m.UUID)
	f, err := forgottenOn(ctx, tx, m)
	if err != nil {
		return m, false, err
	}
	restored := f != nil
	var owner *string
	if restored {
		owner = f.owner
		m.Org, m.CreatedAt = f.org, f.created
		names = append([]string{f.name}, AdoptionNames(f.name, a.ControllerName, m.UUID)[1:]...)
	}
	claimed, err := placementClaims(ctx, tx, m, a.SpokeOwner)
	if err != nil {
		return m, false, err
	}
	if claimed {
		// The hub is placing this model: its insert will index it. Until
		// then there is no row to apply the summary to; it describes the
		// model just created, as the insert does, and later events
		// update the row.
		_, err := updateSummary(ctx, tx, m, a.Charms, a.At)
		return m, false, err
	}
	if err := ensureOrg(ctx, tx, m.Org); err != nil {
		return m, false, err
	}
	m, inserted, err := insertAdopted(ctx, tx, m, a.Charms, names, owner, a.At)
	if err != nil || !inserted {
		return m, false, err
	}
	if err := linkAdopted(ctx, tx, m, restored); err != nil {
		return m, false, err
	}
	return m, true, auditAdopted(ctx, tx, a, m, restored)
}

// placementClaims reports whether a placement claims model m of the
// controller's owner spokeOwner (Models.ClaimPlacement).
func placementClaims(ctx context.Context, tx pgx.Tx, m Model, spokeOwner string) (bool, error) {
	var claimed bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM placements WHERE controller_uuid = $1 AND name = $2
		AND spoke_owner = $3 AND expires_at > now())`, m.ControllerUUID, m.Name, spokeOwner).Scan(&claimed)
	return claimed, pgErr("placements", err)
}

// insertAdopted indexes m under the first of names free in its
// organization, owned by owner (nil: nobody), and returns the row. It
// returns false when the model is indexed already (by a placement that
// committed after the caller looked), whose summary it then applies, and
// ErrAlreadyExists when every name is taken.
func insertAdopted(ctx context.Context, tx pgx.Tx, m Model, charms []Charm, names []string, owner *string, at time.Time) (Model, bool, error) {
	// Created when the controller created it, where it says so.
	created := at
	if !m.CreatedAt.IsZero() {
		created = m.CreatedAt
	}
	for _, name := range names {
		// DO NOTHING on either key: a concurrent insert of the same UUID
		// (placement) or of the same name is waited for, then skipped.
		tag, err := tx.Exec(ctx, `INSERT INTO models (uuid, name, org, owner, controller_uuid, life, status,
			application_count, unit_count, machine_count, event_index, updated_at, status_since, created_at, charms)
			VALUES ($1, $2, $3, $13, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, coalesce($14, '[]'::jsonb))
			ON CONFLICT DO NOTHING`, m.UUID, name, m.Org, m.ControllerUUID, m.Life, m.Status,
			m.ApplicationCount, m.UnitCount, m.MachineCount, int64(m.EventIndex), at, created, owner, charmsArg(charms))
		if err != nil {
			return m, false, pgErr("adopt model "+name, err)
		}
		if tag.RowsAffected() == 1 {
			rows, _ := tx.Query(ctx, `SELECT `+modelCols+` FROM `+modelFrom+` WHERE m.uuid = $1`, m.UUID)
			row, err := pgx.CollectExactlyOneRow(rows, scanModel)
			if err != nil {
				return m, false, pgErr("adopt model "+name, err)
			}
			return row, true, nil
		}
		// Not inserted: either the name is taken, or the model is indexed
		// (by a placement that committed after the caller looked): then
		// the summary still applies.
		indexed, err := updateSummary(ctx, tx, m, charms, at)
		if err != nil || indexed {
			return m, false, err
		}
	}
	return m, false, fmt.Errorf("adopt model %s: %w: names %q are all taken in organization %s", m.UUID, ErrAlreadyExists, names, m.Org)
}

// linkAdopted gives adopted model m its structural tuples (hosting
// controller, owning organization) and, when it is restored, the grants
// kept of it.
func linkAdopted(ctx context.Context, tx pgx.Tx, m Model, restored bool) error {
	obj := authz.ModelObject(m.UUID)
	ts := []authz.Tuple{
		{User: authz.ControllerObject(m.ControllerUUID), Relation: authz.RelController, Object: obj},
		{User: authz.OrgObject(m.Org), Relation: authz.RelOrganization, Object: obj},
	}
	if restored {
		kept, err := forgottenGrants(ctx, tx, m.UUID)
		if err != nil {
			return err
		}
		ts = append(ts, kept...)
	}
	// Restored or not (another organization's now), what was kept of
	// it is spent.
	if _, err := tx.Exec(ctx, `DELETE FROM forgotten_models WHERE uuid = $1`, m.UUID); err != nil {
		return pgErr("forgotten model", err)
	}
	return addTuples(ctx, tx, ts...)
}

// auditAdopted writes Adopt's audit entry for m, adopted as a describes.
func auditAdopted(ctx context.Context, tx pgx.Tx, a Adoption, m Model, restored bool) error {
	details := map[string]any{"name": m.Name, "controller-name": a.ControllerName}
	if restored {
		details["restored"] = true
	}
	if m.Name != a.Model.Name {
		details["spoke-name"] = a.Model.Name
	}
	if a.SpokeOwner != "" {
		details["spoke-owner"] = a.SpokeOwner
	}
	_, err := appendAudit(ctx, tx, AuditEntry{At: a.At, Actor: "hub", Org: m.Org, Operation: OpModelAdopted,
		ModelUUID: m.UUID, ControllerUUID: m.ControllerUUID, Result: ResultOK, Details: details})
	return err
}

// OpModelAdopted is the audit operation of Models.Adopt.
const OpModelAdopted = "model adopted"
