package store

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Group is a named set of identities inside one organization. Its OpenFGA
// object is group:<ID>.
type Group struct {
	ID        string    `json:"id"`
	Org       string    `json:"org"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created-at"`
}

// groupName is what a group may be called (the groups table checks it too).
var groupName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// checkGroupName refuses what a group may not be called.
func checkGroupName(name string) error {
	if !groupName.MatchString(name) {
		return fmt.Errorf("group name %q: %w: lowercase letters, digits, dots, hyphens and underscores, starting with a letter or digit, at most 63", name, ErrInvalid)
	}
	return nil
}

// CreateGroup creates a group in org.
func (s *Store) CreateGroup(ctx context.Context, org, name string) (Group, error) {
	if err := checkGroupName(name); err != nil {
		return Group{}, err
	}
	g := Group{ID: uuid.NewString(), Org: org, Name: name}
	err := s.pool.QueryRow(ctx, `INSERT INTO groups (id, org, name) VALUES ($1, $2, $3) RETURNING created_at`,
		g.ID, org, name).Scan(&g.CreatedAt)
	return g, pgErr(fmt.Sprintf("group %s/%s", org, name), err)
}

// GroupByName returns the group name of org.
func (s *Store) GroupByName(ctx context.Context, org, name string) (Group, error) {
	var g Group
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT id, org, name, created_at FROM groups WHERE org = $1 AND name = $2`, org, name).
		Scan(&id, &g.Org, &g.Name, &g.CreatedAt)
	g.ID = id.String()
	return g, pgErr(fmt.Sprintf("group %s/%s", org, name), err)
}

// AddGroupMember adds an identity to a group (and its OpenFGA membership).
func (s *Store) AddGroupMember(ctx context.Context, groupID, identityID string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// Neither the group nor the identity may go meanwhile: their
		// removal waits for this, or this finds them gone (not found).
		if err := lockRow(ctx, tx, "groups", "group", groupID); err != nil {
			return err
		}
		if err := lockRow(ctx, tx, "identities", "identity", identityID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO group_members (group_id, identity_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
			groupID, identityID)
		if err != nil {
			return pgErr("add group member", err)
		}
		return addTuples(ctx, tx, authz.Tuple{User: authz.UserObject(identityID), Relation: authz.Member, Object: authz.GroupObject(groupID)})
	})
}

// RemoveGroupMember is AddGroupMember's inverse.
func (s *Store) RemoveGroupMember(ctx context.Context, groupID, identityID string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM group_members WHERE group_id = $1 AND identity_id = $2`, groupID, identityID)
		if err != nil {
			return pgErr("remove group member", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("group member: %w", ErrNotFound)
		}
		return removeTuples(ctx, tx, authz.Tuple{User: authz.UserObject(identityID), Relation: authz.Member, Object: authz.GroupObject(groupID)})
	})
}

// Grant records a permission tuple (a grant made by a person) and queues it
// for OpenFGA; granting twice is not an error. A grant to a group that is
// gone (removed meanwhile) is ErrNotFound.
func (s *Store) Grant(ctx context.Context, t authz.Tuple) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockSubject(ctx, tx, t.User); err != nil {
			return err
		}
		return addTuples(ctx, tx, t)
	})
}

// Revoke removes the grants in remove that exist and, if there was one,
// grants leave (a lower level the revoke leaves the user with), in one
// transaction; ErrNotFound when none of remove exists.
func (s *Store) Revoke(ctx context.Context, remove []authz.Tuple, leave *authz.Tuple) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if leave != nil {
			if err := lockSubject(ctx, tx, leave.User); err != nil {
				return err
			}
		}
		held := 0
		for _, t := range remove {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM authz_tuples WHERE "user" = $1 AND relation = $2 AND object = $3`,
				t.User, string(t.Relation), t.Object).Scan(&n); err != nil {
				return pgErr("revoke", err)
			}
			held += n
		}
		if held == 0 {
			return fmt.Errorf("grant %v: %w", remove, ErrNotFound)
		}
		if err := removeTuples(ctx, tx, remove...); err != nil {
			return err
		}
		if leave != nil {
			return addTuples(ctx, tx, *leave)
		}
		return nil
	})
}

// GrantsOn returns the tuples whose object is object.
func (s *Store) GrantsOn(ctx context.Context, object string) ([]authz.Tuple, error) {
	rows, err := s.pool.Query(ctx, `SELECT "user", relation, object FROM authz_tuples WHERE object = $1
		ORDER BY relation, "user"`, object)
	if err != nil {
		return nil, pgErr("grants", err)
	}
	return pgx.CollectRows(rows, scanTuple)
}

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

// modelAccess names the model relations (the only ones ModelUsers reads),
// highest first.
var modelAccess = []accessName{{authz.Administrator, "admin"}, {authz.Writer, "write"}, {authz.Reader, "read"}}

// ModelUsers returns who holds a grant on the model itself (not through
// its organization or controller), each once at its highest level, by
// name. Identities and groups are found by their primary keys.
func (s *Store) ModelUsers(ctx context.Context, model string) ([]ModelUser, error) {
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

// GroupByID returns one group.
func (s *Store) GroupByID(ctx context.Context, id string) (Group, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Group{}, fmt.Errorf("group %q: %w", id, ErrNotFound)
	}
	var g Group
	err := s.pool.QueryRow(ctx, `SELECT id::text, org, name, created_at FROM groups WHERE id = $1`, id).
		Scan(&g.ID, &g.Org, &g.Name, &g.CreatedAt)
	return g, pgErr("group "+id, err)
}

// GroupSummary is a group as listings show it: with its number of members.
type GroupSummary struct {
	Group
	Members int `json:"member-count"`
}

// ListGroups returns the groups of orgs with their member counts, by
// organization then name (in byte order: both columns are COLLATE "C").
func (s *Store) ListGroups(ctx context.Context, orgs []string) ([]GroupSummary, error) {
	rows, err := s.pool.Query(ctx, `SELECT g.id::text, g.org, g.name, g.created_at,
			(SELECT count(*) FROM group_members m WHERE m.group_id = g.id)
		FROM groups g WHERE g.org = ANY($1) ORDER BY g.org, g.name`, orgs)
	if err != nil {
		return nil, pgErr("list groups", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (GroupSummary, error) {
		var g GroupSummary
		return g, r.Scan(&g.ID, &g.Org, &g.Name, &g.CreatedAt, &g.Members)
	})
}

// GroupMember is an identity in a group, named as Identity.Name names it.
type GroupMember struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// ListGroupMembers returns a group's members by name (byte order).
func (s *Store) ListGroupMembers(ctx context.Context, groupID string) ([]GroupMember, error) {
	rows, err := s.pool.Query(ctx, `SELECT i.id::text, identity_name(i.email, i.kind, i.display_name, i.subject), i.kind
		FROM group_members m JOIN identities i ON i.id = m.identity_id
		WHERE m.group_id = $1 ORDER BY identity_name(i.email, i.kind, i.display_name, i.subject) COLLATE "C", i.id`, groupID)
	if err != nil {
		return nil, pgErr("group members", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (GroupMember, error) {
		var m GroupMember
		return m, r.Scan(&m.ID, &m.Name, &m.Kind)
	})
}

// GroupGrants returns the grants made to a group: the expected tuples
// whose subject is its members (group:<ID>#member), by object and relation.
func (s *Store) GroupGrants(ctx context.Context, groupID string) ([]authz.Tuple, error) {
	rows, err := s.pool.Query(ctx, `SELECT "user", relation, object FROM authz_tuples WHERE "user" = $1
		ORDER BY object, relation`, authz.GroupMembers(groupID))
	if err != nil {
		return nil, pgErr("group grants", err)
	}
	return pgx.CollectRows(rows, scanTuple)
}

// RemoveGroup deletes a group, its memberships and, in the same
// transaction, every tuple on it: its members' membership and every grant
// made to the group, so its members lose what it gave them (in OpenFGA
// once the outbox delivers).
func (s *Store) RemoveGroup(ctx context.Context, id string) error {
	if uuid.Validate(id) != nil {
		return fmt.Errorf("group %q: %w", id, ErrNotFound)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// The row goes first, which locks it: a member or a grant being
		// added meanwhile (both lock the row) waits for this transaction
		// and then finds no group; one committed before is read below.
		tag, err := tx.Exec(ctx, `DELETE FROM groups WHERE id = $1`, id)
		if err != nil {
			return pgErr("remove group", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("group %s: %w", id, ErrNotFound)
		}
		return removeTuplesOn(ctx, tx, []string{authz.GroupObject(id)}, []string{authz.GroupMembers(id)})
	})
}

// RenameGroup gives a group another name in its organization. Its OpenFGA
// object is its id, so no tuple changes.
func (s *Store) RenameGroup(ctx context.Context, id, name string) (Group, error) {
	if err := checkGroupName(name); err != nil {
		return Group{}, err
	}
	if uuid.Validate(id) != nil {
		return Group{}, fmt.Errorf("group %q: %w", id, ErrNotFound)
	}
	var g Group
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT id::text, org, created_at FROM groups WHERE id = $1 FOR UPDATE`, id).
			Scan(&g.ID, &g.Org, &g.CreatedAt)
		if err != nil {
			return pgErr("group "+id, err)
		}
		g.Name = name
		_, err = tx.Exec(ctx, `UPDATE groups SET name = $2 WHERE id = $1`, id, name)
		return pgErr(fmt.Sprintf("group %s/%s", g.Org, name), err)
	})
	return g, err
}

// lockSubject holds, until the transaction ends, the row of what subject
// names: a group (group:<ID>#member), so that RemoveGroup cannot remove it
// between here and the commit, or an identity (user:<ID>), so that
// RemoveIdentity cannot; ErrNotFound when it is gone. Other subjects
// (everyone) need nothing.
func lockSubject(ctx context.Context, tx pgx.Tx, subject string) error {
	if id, ok := strings.CutPrefix(subject, authz.TypeUser+":"); ok && uuid.Validate(id) == nil {
		return lockRow(ctx, tx, "identities", "identity", id)
	}
	rest, group := strings.CutPrefix(subject, authz.TypeGroup+":")
	id, members := strings.CutSuffix(rest, "#"+string(authz.Member))
	if !group || !members || uuid.Validate(id) != nil {
		return nil
	}
	return lockRow(ctx, tx, "groups", "group", id)
}

// lockRow takes a key-share lock on the row id of table (groups or
// identities): it cannot be deleted before the transaction ends.
func lockRow(ctx context.Context, tx pgx.Tx, table, what, id string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM `+table+` WHERE id = $1 FOR KEY SHARE`, id).Scan(&one)
	return pgErr(what+" "+id, err)
}
