package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Grant is one grant of the access review: a tuple of authz_tuples whose
// subject is a user, everyone (user:*) or a group's members, with the
// names of both ends and the organization whose object it is ("" for
// the hub and shared controllers).
type Grant struct {
	Subject, SubjectName, Relation, Object, ObjectName, Org string
	Since                                                   time.Time
}

// GrantScope chooses the grants of Grants.Review: every one (All), or
// those on the objects of Orgs; within organization Org when set.
type GrantScope struct {
	All  bool
	Orgs []string
	Org  string
}

// Review returns the grants in scope, by organization, object, relation
// and subject, at most most of them (ErrInvalid past that: an answer the
// hub does not hold whole).
func (s *Grants) Review(ctx context.Context, scope GrantScope, most int) ([]Grant, error) {
	rows, err := s.pool.Query(ctx, `WITH t AS (
			SELECT "user", relation, object, created_at,
				split_part("user", ':', 1) AS utype, split_part(substr("user", strpos("user", ':') + 1), '#', 1) AS uid,
				split_part(object, ':', 1) AS otype, substr(object, strpos(object, ':') + 1) AS oid
			FROM authz_tuples WHERE "user" LIKE 'user:%' OR "user" LIKE 'group:%'),
		named AS (
			SELECT t."user", t.relation, t.object, t.created_at,
				CASE WHEN t."user" = 'user:*' THEN 'everyone'
					WHEN t.utype = 'user' THEN coalesce(nullif(si.email, ''),
						CASE WHEN si.kind = 'service-account' THEN nullif(si.display_name, '') END, si.subject, '')
					ELSE coalesce(sg.org || '/' || sg.name, '') END AS subject_name,
				CASE t.otype WHEN 'model' THEN coalesce(om.name, '') WHEN 'controller' THEN coalesce(oc.name, '')
					WHEN 'group' THEN coalesce(og.name, '') WHEN 'organization' THEN t.oid WHEN 'hub' THEN 'hub'
					ELSE '' END AS object_name,
				CASE t.otype WHEN 'model' THEN coalesce(om.org, '') WHEN 'controller' THEN coalesce(oc.org, '')
					WHEN 'group' THEN coalesce(og.org, '') WHEN 'organization' THEN t.oid
					ELSE '' END AS org
			FROM t
			LEFT JOIN identities si ON t.utype = 'user' AND si.id::text = t.uid
			LEFT JOIN groups sg ON t.utype = 'group' AND sg.id::text = t.uid
			LEFT JOIN groups og ON t.otype = 'group' AND og.id::text = t.oid
			LEFT JOIN models om ON t.otype = 'model' AND om.uuid::text = t.oid
			LEFT JOIN controllers oc ON t.otype = 'controller' AND oc.uuid::text = t.oid)
		SELECT "user", subject_name, relation, object, object_name, org, created_at FROM named
		WHERE ($1 OR org = ANY($2)) AND ($3 = '' OR org = $3)
		ORDER BY org, object, relation, "user" LIMIT $4`, scope.All, scope.Orgs, scope.Org, most+1)
	if err != nil {
		return nil, pgErr("access review", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Grant, error) {
		var g Grant
		err := r.Scan(&g.Subject, &g.SubjectName, &g.Relation, &g.Object, &g.ObjectName, &g.Org, &g.Since)
		return g, err
	})
	if err != nil {
		return nil, pgErr("access review", err)
	}
	if len(out) > most {
		return nil, fmt.Errorf("store: access review: %w: more than %d grants: narrow it to an organization", ErrInvalid, most)
	}
	return out, nil
}
