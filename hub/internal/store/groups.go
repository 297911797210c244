package store

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Groups are the named sets of identities of each organization, and their
// memberships.
type Groups struct{ *db }

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

// Create creates a group in org.
func (s *Groups) Create(ctx context.Context, org, name string) (Group, error) {
	if err := checkGroupName(name); err != nil {
		return Group{}, err
	}
	g := Group{ID: uuid.NewString(), Org: org, Name: name}
	err := s.pool.QueryRow(ctx, `INSERT INTO groups (id, org, name) VALUES ($1, $2, $3) RETURNING created_at`,
		g.ID, org, name).Scan(&g.CreatedAt)
	return g, pgErr(fmt.Sprintf("group %s/%s", org, name), err)
}

// ByName returns the group name of org.
func (s *Groups) ByName(ctx context.Context, org, name string) (Group, error) {
	var g Group
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT id, org, name, created_at FROM groups WHERE org = $1 AND name = $2`, org, name).
		Scan(&id, &g.Org, &g.Name, &g.CreatedAt)
	g.ID = id.String()
	return g, pgErr(fmt.Sprintf("group %s/%s", org, name), err)
}

// AddMember adds an identity to a group (and its OpenFGA membership).
func (s *Groups) AddMember(ctx context.Context, groupID, identityID string) error {
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

// RemoveMember is Groups.AddMember's inverse.
func (s *Groups) RemoveMember(ctx context.Context, groupID, identityID string) error {
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

// ByID returns one group.
func (s *Groups) ByID(ctx context.Context, id string) (Group, error) {
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

// List returns the groups of orgs with their member counts, by
// organization then name (in byte order: both columns are COLLATE "C").
func (s *Groups) List(ctx context.Context, orgs []string) ([]GroupSummary, error) {
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

// ListMembers returns a group's members by name (byte order).
func (s *Groups) ListMembers(ctx context.Context, groupID string) ([]GroupMember, error) {
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

// Grants returns the grants made to a group: the expected tuples
// whose subject is its members (group:<ID>#member), by object and relation.
func (s *Groups) Grants(ctx context.Context, groupID string) ([]authz.Tuple, error) {
	rows, err := s.pool.Query(ctx, `SELECT "user", relation, object FROM authz_tuples WHERE "user" = $1
		ORDER BY object, relation`, authz.GroupMembers(groupID))
	if err != nil {
		return nil, pgErr("group grants", err)
	}
	return pgx.CollectRows(rows, scanTuple)
}

// Remove deletes a group, its memberships and, in the same
// transaction, every tuple on it: its members' membership and every grant
// made to the group, so its members lose what it gave them (in OpenFGA
// once the outbox delivers).
func (s *Groups) Remove(ctx context.Context, id string) error {
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

// Rename gives a group another name in its organization. Its OpenFGA
// object is its id, so no tuple changes.
func (s *Groups) Rename(ctx context.Context, id, name string) (Group, error) {
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
