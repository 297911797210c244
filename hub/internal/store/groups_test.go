package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// groupsFixture is adoptFixture (acme, globex, bob in globex) with ann and
// the service account ci in acme, and groups acme/ops (ann and ci, granted
// read on a model and admin on acme), acme/web (bob) and globex/ops.
type groupsFixture struct {
	*adoptFixture
	ann, ci              store.Identity
	ops, web, globexOps  store.Group
	model                string
	opsGrants, webGrants []authz.Tuple
}

func newGroupsFixture(t *testing.T) *groupsFixture {
	t.Helper()
	f := &groupsFixture{adoptFixture: newAdoptFixture(t), model: uuid.NewString()}
	ctx := t.Context()
	var err error
	if f.ann, _, err = f.s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: "ann", Email: "ann@example.com"}, "acme", time.Now()); err != nil {
		t.Fatal(err)
	}
	if f.ci, _, err = f.s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: "sa-ci", Kind: store.KindServiceAccount,
		DisplayName: "ci"}, "acme", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		dst       *store.Group
		org, name string
	}{{&f.web, "acme", "web"}, {&f.ops, "acme", "ops"}, {&f.globexOps, "globex", "ops"}} {
		if *g.dst, err = f.s.Groups.Create(ctx, g.org, g.name); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []struct {
		g  store.Group
		id store.Identity
	}{{f.ops, f.ann}, {f.ops, f.ci}, {f.web, f.bob}} {
		if err := f.s.Groups.AddMember(ctx, m.g.ID, m.id.ID); err != nil {
			t.Fatal(err)
		}
	}
	f.opsGrants = []authz.Tuple{
		{User: authz.GroupMembers(f.ops.ID), Relation: authz.Reader, Object: authz.ModelObject(f.model)},
		{User: authz.GroupMembers(f.ops.ID), Relation: authz.Administrator, Object: authz.OrgObject("acme")},
	}
	f.webGrants = []authz.Tuple{{User: authz.GroupMembers(f.web.ID), Relation: authz.Writer, Object: authz.ModelObject(f.model)}}
	for _, g := range append(slices.Clone(f.opsGrants), f.webGrants...) {
		if err := f.s.Grants.Add(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// onGroup returns the expected tuples that name group id, as strings.
func (f *groupsFixture) onGroup(t *testing.T, id string) []string {
	t.Helper()
	var out []string
	for _, tu := range f.expected(t) {
		if strings.Contains(tu, id) {
			out = append(out, tu)
		}
	}
	return out
}

func TestListGroups(t *testing.T) {
	f := newGroupsFixture(t)
	ctx := t.Context()
	list := func(orgs ...string) string {
		t.Helper()
		gs, err := f.s.Groups.List(ctx, orgs)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range gs {
			if g.ID == "" || g.CreatedAt.IsZero() {
				t.Errorf("group %+v lacks its id or creation time", g)
			}
			out = append(out, fmt.Sprintf("%s/%s:%d", g.Org, g.Name, g.Members))
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		orgs []string
		want string
	}{
		{[]string{"globex", "acme"}, "acme/ops:2 acme/web:1 globex/ops:0"},
		{[]string{"acme"}, "acme/ops:2 acme/web:1"},
		{[]string{"nope"}, ""},
		{nil, ""},
	} {
		if got := list(c.orgs...); got != c.want {
			t.Errorf("groups of %q: %q, want %q", c.orgs, got, c.want)
		}
	}

	members, err := f.s.Groups.ListMembers(ctx, f.ops.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(members); got != fmt.Sprint([]store.GroupMember{
		{ID: f.ann.ID, Name: "ann@example.com", Kind: "user"}, {ID: f.ci.ID, Name: "ci", Kind: "service-account"},
	}) {
		t.Errorf("members of acme/ops: %s", got)
	}
	grants, err := f.s.Groups.Grants(ctx, f.ops.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != len(f.opsGrants) {
		t.Errorf("grants to acme/ops: %v, want %v", grants, f.opsGrants)
	}
	for _, g := range f.opsGrants {
		if !slices.Contains(grants, g) {
			t.Errorf("grants to acme/ops: %v lacks %v", grants, g)
		}
	}
}

// TestRemoveGroup: the group, its memberships and every tuple on it go in
// one transaction, each queued for deletion from OpenFGA; other groups
// keep theirs, and nothing can be granted to the removed group afterwards.
func TestRemoveGroup(t *testing.T) {
	f := newGroupsFixture(t)
	ctx := t.Context()
	before, err := f.s.Outbox.Pending(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	removed := f.onGroup(t, f.ops.ID)
	if len(removed) != 4 { // two members, two grants
		t.Fatalf("tuples on acme/ops before: %q", removed)
	}
	webBefore := f.onGroup(t, f.web.ID)
	if err := f.s.Groups.Remove(ctx, f.ops.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.onGroup(t, f.ops.ID); len(got) != 0 {
		t.Errorf("tuples left on the removed group: %q", got)
	}
	if got := f.onGroup(t, f.web.ID); !slices.Equal(got, webBefore) {
		t.Errorf("acme/web's tuples: %q, want %q", got, webBefore)
	}
	after, err := f.s.Outbox.Pending(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, e := range after[len(before):] {
		if !e.Delete {
			t.Errorf("removing a group queued a write: %v", e.Tuple)
		}
		deleted = append(deleted, e.Tuple.String())
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, removed) {
		t.Errorf("queued deletions %q, want %q", deleted, removed)
	}
	if _, err := f.s.Groups.ByID(ctx, f.ops.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the removed group: %v", err)
	}
	if ms, err := f.s.Groups.ListMembers(ctx, f.ops.ID); err != nil || len(ms) != 0 {
		t.Errorf("members of the removed group: %v %v", ms, err)
	}
	if gs, err := f.s.Groups.List(ctx, []string{"acme"}); err != nil || len(gs) != 1 || gs[0].ID != f.web.ID {
		t.Errorf("acme's groups after: %+v %v", gs, err)
	}

	// What comes for the group once it is gone finds it gone.
	for what, err := range map[string]error{
		"remove again":    f.s.Groups.Remove(ctx, f.ops.ID),
		"remove a bad id": f.s.Groups.Remove(ctx, "not-a-uuid"),
		"grant":           f.s.Grants.Add(ctx, f.opsGrants[0]),
		"add a member":    f.s.Groups.AddMember(ctx, f.ops.ID, f.ann.ID),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", what, err)
		}
	}
	if got := f.onGroup(t, f.ops.ID); len(got) != 0 {
		t.Errorf("tuples on the removed group after the refusals: %q", got)
	}
}

// TestRenameGroup: a group keeps its id, members and grants under its new
// name; the name rules and uniqueness are Groups.Create's.
func TestRenameGroup(t *testing.T) {
	f := newGroupsFixture(t)
	ctx := t.Context()
	tuples := f.onGroup(t, f.ops.ID)
	queued, err := f.s.Outbox.Pending(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.s.Groups.Rename(ctx, f.ops.ID, "sre")
	if err != nil {
		t.Fatal(err)
	}
	if g.ID != f.ops.ID || g.Org != "acme" || g.Name != "sre" || !g.CreatedAt.Equal(f.ops.CreatedAt) {
		t.Errorf("renamed: %+v, was %+v", g, f.ops)
	}
	if byName, err := f.s.Groups.ByName(ctx, "acme", "sre"); err != nil || byName.ID != f.ops.ID {
		t.Errorf("acme/sre: %+v %v", byName, err)
	}
	if _, err := f.s.Groups.ByName(ctx, "acme", "ops"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("acme/ops after the rename: %v", err)
	}
	if got := f.onGroup(t, f.ops.ID); !slices.Equal(got, tuples) {
		t.Errorf("tuples after the rename: %q, want %q", got, tuples)
	}
	if ms, err := f.s.Groups.ListMembers(ctx, f.ops.ID); err != nil || len(ms) != 2 {
		t.Errorf("members after the rename: %v %v", ms, err)
	}
	if after, err := f.s.Outbox.Pending(ctx, 1000); err != nil || len(after) != len(queued) {
		t.Errorf("a rename queued tuples: %d entries, was %d (%v)", len(after), len(queued), err)
	}
	if _, err := f.s.Groups.Rename(ctx, f.ops.ID, "sre"); err != nil {
		t.Errorf("renaming to its own name: %v", err)
	}
	// Another organization's ops does not clash.
	if _, err := f.s.Groups.Rename(ctx, f.ops.ID, "ops"); err != nil {
		t.Errorf("back to ops: %v", err)
	}

	for _, c := range []struct {
		id, name string
		want     error
		says     string
	}{
		{f.ops.ID, "web", store.ErrAlreadyExists, "group acme/web"},
		{f.ops.ID, "Bad Name", store.ErrInvalid, `group name "Bad Name"`},
		{f.ops.ID, "", store.ErrInvalid, "lowercase letters"},
		{f.ops.ID, strings.Repeat("a", 64), store.ErrInvalid, "at most 63"},
		{uuid.NewString(), "x", store.ErrNotFound, "group"},
		{"not-a-uuid", "x", store.ErrNotFound, "not-a-uuid"},
	} {
		if _, err := f.s.Groups.Rename(ctx, c.id, c.name); !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("rename %s to %q: %v, want %v saying %q", c.id, c.name, err, c.want, c.says)
		}
	}
	if g, err := f.s.Groups.ByID(ctx, f.ops.ID); err != nil || g.Name != "ops" {
		t.Errorf("after the refused renames: %+v %v", g, err)
	}
}

// TestGrantWaitsForGroupRemoval: a grant to a group that is being removed
// waits for the removal and then refuses, so no grant outlives its group.
func TestGrantWaitsForGroupRemoval(t *testing.T) {
	f := newGroupsFixture(t)
	ctx := t.Context()
	grant := authz.Tuple{User: authz.GroupMembers(f.web.ID), Relation: authz.Administrator, Object: authz.OrgObject("acme")}
	// Groups.Remove's first step, held open.
	tx, done := f.waitsBehind(t, "the grant", `DELETE FROM groups WHERE id = $1`, f.web.ID,
		func() error { return f.s.Grants.Add(ctx, grant) })
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the grant after the removal: %v, want ErrNotFound", err)
	}
	if got := f.onGroup(t, f.web.ID); slices.Contains(got, grant.String()) {
		t.Errorf("the grant outlived its group: %q", got)
	}
}

// TestChangesWaitForIdentityRemoval: a grant to a person, or their
// membership of a group, made while the person is being removed waits for
// the removal and then finds them gone, rather than outliving them (a
// grant to nobody) or failing on a foreign key.
func TestChangesWaitForIdentityRemoval(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(f *groupsFixture, ctx context.Context) error
	}{
		{"grant", func(f *groupsFixture, ctx context.Context) error {
			return f.s.Grants.Add(ctx, authz.Tuple{User: authz.UserObject(f.ann.ID), Relation: authz.Writer, Object: authz.ModelObject(f.model)})
		}},
		{"membership", func(f *groupsFixture, ctx context.Context) error {
			return f.s.Groups.AddMember(ctx, f.web.ID, f.ann.ID)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newGroupsFixture(t)
			ctx := t.Context()
			// Identities.Remove's first step, held open.
			tx, done := f.waitsBehind(t, "the "+c.name, `SELECT 1 FROM identities WHERE id = $1 FOR UPDATE`, f.ann.ID,
				func() error { return c.change(f, ctx) })
			if _, err := tx.Exec(ctx, `DELETE FROM identities WHERE id = $1`, f.ann.ID); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the %s after the removal: %v, want ErrNotFound", c.name, err)
			}
		})
	}
}

// waitsBehind runs stmt (a removal's first step) in a transaction it
// leaves open until the test ends, starts change, and waits until change
// is blocked on the lock stmt took; change finishing first fails the test.
// It returns the open transaction and change's result.
func (f *groupsFixture) waitsBehind(t *testing.T, what, stmt string, arg any, change func() error) (pgx.Tx, <-chan error) {
	t.Helper()
	ctx := t.Context()
	tx, err := f.s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.WithoutCancel(ctx)) })
	if _, err := tx.Exec(ctx, stmt, arg); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- change() }()
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("%s went through while the removal was under way: %v", what, err)
		default:
		}
		var waiting int
		err := f.s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return waiting > 0, err
	}, "%s waits for the removal", what)
	return tx, done
}
