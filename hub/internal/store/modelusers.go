package store

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/droverhq/drover/authz"
)

// ModelUser is a user, a group or everyone with a grant on a model itself,
// as Juju's show-model lists its users.
type ModelUser struct {
	Name        string     `json:"name"`
	DisplayName string     `json:"display-name,omitempty"`
	Kind        string     `json:"kind"`   // "user", "service-account", "group" or "everyone"
	Access      string     `json:"access"` // Juju's level: "admin", "write" or "read"
	LastLogin   *time.Time `json:"last-connection,omitempty"`
}

// accessName is a model relation and its name in Juju's words.
type accessName struct {
	rel    authz.Relation
	access string
}

// modelAccess names the model relations (the only ones Models.Users reads),
// highest first.
var modelAccess = []accessName{{authz.Administrator, "admin"}, {authz.Writer, "write"}, {authz.Reader, "read"}}

// Users returns who holds a grant on the model itself (not through
// its organization or controller), each once at its highest level, by
// name. Identities and groups are found by their primary keys.
func (s *Models) Users(ctx context.Context, model string) ([]ModelUser, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.relation, t."user",
			CASE WHEN i.id IS NOT NULL THEN identity_name(i.email, i.kind, i.display_name, i.subject) ELSE coalesce(g.name, '') END,
			coalesce(i.display_name, ''), coalesce(i.kind, ''), g.id IS NOT NULL, i.last_login
		FROM authz_tuples t
		LEFT JOIN identities i ON i.id = CASE WHEN t."user" ~ '^user:[0-9a-f-]{36}$' THEN substr(t."user", 6)::uuid END
		LEFT JOIN groups g ON g.id = CASE WHEN t."user" ~ '^group:[0-9a-f-]{36}#member$' THEN substr(t."user", 7, 36)::uuid END
		WHERE t.object = $1 AND t.relation IN ('administrator', 'writer', 'reader')`, authz.ModelObject(model))
	if err != nil {
		return nil, pgErr("model users", err)
	}
	defer rows.Close()
	type ranked struct {
		ModelUser
		rank int // index in modelAccess: lower is higher
	}
	bySubject := map[string]ranked{}
	for rows.Next() {
		var rel, subject string
		var group bool
		var u ModelUser
		if err := rows.Scan(&rel, &subject, &u.Name, &u.DisplayName, &u.Kind, &group, &u.LastLogin); err != nil {
			return nil, pgErr("model users", err)
		}
		rank := slices.IndexFunc(modelAccess, func(a accessName) bool { return string(a.rel) == rel })
		u.Access = modelAccess[rank].access
		switch {
		case subject == authz.Everyone:
			u.Name, u.Kind = "everyone", "everyone"
		case group:
			u.Kind = "group"
		case u.Name == "": // a tuple whose subject is gone: show it as it is
			u.Name, u.Kind = subject, "unknown"
		}
		if cur, ok := bySubject[subject]; !ok || rank < cur.rank {
			bySubject[subject] = ranked{u, rank}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr("model users", err)
	}
	out := make([]ModelUser, 0, len(bySubject))
	for _, u := range bySubject {
		out = append(out, u.ModelUser)
	}
	slices.SortFunc(out, func(a, b ModelUser) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind)) })
	return out, nil
}
