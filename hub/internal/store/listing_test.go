package store_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestOwnerNameFollowsIdentity: a model's owner is named as its identity
// is now, by Models.ByUUID and by the listing alike: from insertion, after a
// login that changes the identity's email, and as a service account's
// client id when it has no email. A login that changes no name rewrites no
// model row.
func TestOwnerNameFollowsIdentity(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	login := func(subject, email, display string, kind string) store.Identity {
		t.Helper()
		id, _, err := f.s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: subject, Email: email,
			DisplayName: display, Kind: kind}, "acme", time.Now())

		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	alice := login("alice-sub", "alice@example.com", "Alice", store.KindUser)
	robot := login("robot-sub", "", "ci-robot", store.KindServiceAccount)
	owned := map[string]string{} // model UUID → owner id ("" for none)
	for name, owner := range map[string]string{"a1": alice.ID, "a2": alice.ID, "r1": robot.ID, "none": ""} {
		m := store.Model{UUID: uuid.NewString(), Name: name, Org: "acme", Owner: owner, ControllerUUID: f.ctrl}
		if err := f.s.Models.Insert(ctx, m); err != nil {
			t.Fatal(err)
		}
		owned[m.UUID] = owner
	}
	check := func(want map[string]string) { // owner id → name
		t.Helper()
		listed := map[string]string{}
		err := f.s.Models.Visible(ctx, store.Visibility{Orgs: []string{"acme"}, Relations: []authz.Relation{authz.Reader}},
			func(m *store.ModelRow) error {
				listed[uuid.UUID(m.UUID).String()] = string(m.OwnerName)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) != len(owned) {
			t.Fatalf("listed %d models, want %d", len(listed), len(owned))
		}
		for id, owner := range owned {
			m, err := f.s.Models.ByUUID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if m.OwnerName != want[owner] || listed[id] != want[owner] {
				t.Errorf("model %s (owner %q): named %q by ModelByUUID, %q by the listing; want %q",
					m.Name, owner, m.OwnerName, listed[id], want[owner])
			}
		}
	}
	check(map[string]string{alice.ID: "alice@example.com", robot.ID: "ci-robot", "": ""})

	versions := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		rows, err := f.s.Pool().Query(ctx, `SELECT uuid::text, xmin::text FROM models`)
		if err != nil {
			t.Fatal(err)
		}
		var id, xmin string
		for rows.Next() {
			if err := rows.Scan(&id, &xmin); err != nil {
				t.Fatal(err)
			}
			out[id] = xmin
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := versions()
	login("alice-sub", "alice@example.com", "Alice Liddell", store.KindUser) // display name only: not her name
	if after := versions(); !maps.Equal(before, after) {
		t.Errorf("a login that kept every name rewrote model rows: %v, then %v", before, after)
	}
	login("alice-sub", "alice@wonderland.example", "Alice", store.KindUser)
	login("robot-sub", "robot@example.com", "ci-robot", store.KindServiceAccount)
	check(map[string]string{alice.ID: "alice@wonderland.example", robot.ID: "robot@example.com", "": ""})
}

// TestMigrationNamesExistingOwners: models indexed before owner names were
// kept on the row get their owner's name when the hub migrates.
func TestMigrationNamesExistingOwners(t *testing.T) {
	ctx := t.Context()
	ctrl, owner, m, unowned := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	s := storeMigratedOver(t, 5, []sqlArgs{
		{`INSERT INTO organizations (name) VALUES ('acme')`, nil},
		{`INSERT INTO identities (id, issuer, subject, email, org) VALUES ($1, 'https://idp.test', 'bob', 'bob@example.com', 'acme')`, []any{owner}},
		{`INSERT INTO controllers (uuid, name) VALUES ($1, 'east')`, []any{ctrl}},
		{`INSERT INTO models (uuid, name, org, owner, controller_uuid) VALUES ($1, 'prod', 'acme', $2, $3)`, []any{m, owner, ctrl}},
		{`INSERT INTO models (uuid, name, org, controller_uuid) VALUES ($1, 'orphan', 'acme', $2)`, []any{unowned, ctrl}},
	})
	for id, want := range map[string]string{m: "bob@example.com", unowned: ""} {
		got, err := s.Models.ByUUID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.OwnerName != want {
			t.Errorf("model %s after migrating: owner named %q, want %q", got.Name, got.OwnerName, want)
		}
	}
}

// TestModelKeysAndRows: Models.VisibleKeys lists what Models.Visible lists,
// in its order and with its row versions; a write to a row changes its
// version and no other's; Models.RowsByUUID reads those rows as
// Models.Visible does and skips UUIDs that are not indexed.
func TestModelKeysAndRows(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	for i := range 5 {
		if err := f.s.Models.Insert(ctx, store.Model{UUID: uuid.NewString(), Name: fmt.Sprintf("m%d", 4-i), Org: "acme",
			Owner: f.bob.ID, ControllerUUID: f.ctrl, Status: "active"}); err != nil {
			t.Fatal(err)
		}
	}
	v := store.Visibility{Orgs: []string{"acme"}, Relations: []authz.Relation{authz.Reader}}
	read := func() (keys []store.ModelKey, rows map[[16]byte]string) {
		t.Helper()
		rows = map[[16]byte]string{}
		if err := f.s.Models.Visible(ctx, v, func(m *store.ModelRow) error {
			keys = append(keys, store.ModelKey{UUID: m.UUID, Version: m.Version})
			rows[m.UUID] = fmt.Sprintf("%s %s %s %s %d", m.Name, m.OwnerName, m.Status, m.UpdatedAt, m.EventIndex)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.Models.VisibleKeys(ctx, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, keys) {
			t.Fatalf("VisibleModelKeys lists %v, VisibleModels %v", got, keys)
		}
		return keys, rows
	}
	keys, rows := read()
	if len(keys) != 5 {
		t.Fatalf("listed %d models, want 5", len(keys))
	}
	changed := keys[2]
	if indexed, err := f.s.Models.UpdateSummary(ctx, store.Model{UUID: uuid.UUID(changed.UUID).String(), Name: "m2", Org: "acme",
		ControllerUUID: f.ctrl, Life: "alive", Status: "blocked", EventIndex: 4}, time.Now()); err != nil || !indexed {
		t.Fatalf("summary: indexed %v, %v", indexed, err)
	}
	after, rowsAfter := read()
	for i, k := range after {
		if moved := k.Version != keys[i].Version; moved != (k.UUID == changed.UUID) {
			t.Errorf("model %d: version %d, then %d after a write to model 2", i, keys[i].Version, k.Version)
		}
	}
	ids := [][16]byte{changed.UUID, keys[0].UUID, uuid.New()}
	got := map[[16]byte]string{}
	if err := f.s.Models.RowsByUUID(ctx, ids, func(m *store.ModelRow) error {
		got[m.UUID] = fmt.Sprintf("%s %s %s %s %d", m.Name, m.OwnerName, m.Status, m.UpdatedAt, m.EventIndex)
		if m.UUID == changed.UUID && m.Version != after[2].Version {
			t.Errorf("ModelRowsByUUID reads version %d of model 2, the listing %d", m.Version, after[2].Version)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[changed.UUID] != rowsAfter[changed.UUID] || got[keys[0].UUID] != rows[keys[0].UUID] {
		t.Errorf("ModelRowsByUUID read %q, want %q and %q", got, rowsAfter[changed.UUID], rows[keys[0].UUID])
	}
}

// TestModelVersions: rows indexed before versions existed get one each
// when the hub migrates; every write gives a row a version it never had,
// even one that changes nothing, and so does deleting a model and
// indexing the same UUID again.
func TestModelVersions(t *testing.T) {
	ctx := t.Context()
	ctrl := uuid.NewString()
	old := []string{uuid.NewString(), uuid.NewString()}
	s := storeMigratedOver(t, 6, []sqlArgs{
		{`INSERT INTO organizations (name) VALUES ('acme')`, nil},
		{`INSERT INTO controllers (uuid, name) VALUES ($1, 'east')`, []any{ctrl}},
		{`INSERT INTO models (uuid, name, org, controller_uuid) VALUES ($1, 'a', 'acme', $3), ($2, 'b', 'acme', $3)`, []any{old[0], old[1], ctrl}},
	})

	seen := map[int64]string{}
	version := func(what, id string) {
		t.Helper()
		var got []int64
		if err := s.Models.RowsByUUID(ctx, [][16]byte{uuid.MustParse(id)}, func(m *store.ModelRow) error {
			got = append(got, m.Version)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: read %d rows of model %s", what, len(got), id)
		}
		if before, ok := seen[got[0]]; ok {
			t.Errorf("%s: version %d again (first seen %s)", what, got[0], before)
		}
		seen[got[0]] = what
	}
	version("migrated a", old[0])
	version("migrated b", old[1])
	if _, err := s.Pool().Exec(ctx, `UPDATE models SET status = status WHERE uuid = $1`, old[0]); err != nil {
		t.Fatal(err)
	}
	version("a written unchanged", old[0])
	if err := s.Models.Delete(ctx, old[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Models.Insert(ctx, store.Model{UUID: old[1], Name: "b", Org: "acme", ControllerUUID: ctrl}); err != nil {
		t.Fatal(err)
	}
	version("b indexed again", old[1])
}

// sqlArgs is a statement and its arguments.
type sqlArgs struct {
	sql  string
	args []any
}

// storeMigratedOver opens a fresh database at schema version v, runs
// stmts on it (rows as a hub of that version wrote them), and returns the
// store opened on it, which migrates it to the newest version.
func storeMigratedOver(t *testing.T, v int, stmts []sqlArgs) *store.Store {
	t.Helper()
	newStore(t) // starts the server
	ctx := t.Context()
	dsn := pg.NewDatabase(t, "")
	if err := store.MigrateDSNTo(ctx, dsn, v); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := db.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	db.Close(ctx)
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
