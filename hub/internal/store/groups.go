package store

import (
	"context"
	"fmt"
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

// CreateGroup creates a group in org.
func (s *Store) CreateGroup(ctx context.Context, org, name string) (Group, error) {
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

// ListGroupMembers returns the identity ids in a group, sorted.
func (s *Store) ListGroupMembers(ctx context.Context, groupID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT identity_id::text FROM group_members WHERE group_id = $1 ORDER BY 1`, groupID)
	if err != nil {
		return nil, pgErr("group members", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Grant records a permission tuple (a grant made by a person) and queues it
// for OpenFGA; granting twice is not an error.
func (s *Store) Grant(ctx context.Context, t authz.Tuple) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return addTuples(ctx, tx, t) })
}

// Revoke removes a grant; revoking a grant that does not exist returns
// ErrNotFound.
func (s *Store) Revoke(ctx context.Context, t authz.Tuple) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM authz_tuples WHERE "user" = $1 AND relation = $2 AND object = $3`,
			t.User, string(t.Relation), t.Object).Scan(&n); err != nil {
			return pgErr("revoke", err)
		}
		if n == 0 {
			return fmt.Errorf("grant %s: %w", t, ErrNotFound)
		}
		return removeTuples(ctx, tx, t)
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
