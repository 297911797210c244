package authz_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/droverhq/drover/authz"
)

func TestNewIsIdempotent(t *testing.T) {
	ctx := testContext(t)
	c1 := newClient(t)
	name := "idem-" + c1.StoreID()
	a, err := authz.New(ctx, fgaURL, name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := authz.New(ctx, fgaURL, name)
	if err != nil {
		t.Fatal(err)
	}
	if a.StoreID() != b.StoreID() || a.ModelID() != b.ModelID() {
		t.Fatalf("second New: store %s model %s, want store %s model %s",
			b.StoreID(), b.ModelID(), a.StoreID(), a.ModelID())
	}
}

func TestNewReplacesADifferentModel(t *testing.T) {
	ctx := testContext(t)
	a := newClient(t)
	name := "replace-" + a.StoreID()
	first, err := authz.New(ctx, fgaURL, name)
	if err != nil {
		t.Fatal(err)
	}
	// Someone (an older binary) writes another model as the latest.
	other := `{"schema_version":"1.1","type_definitions":[{"type":"user"}]}`
	resp, err := http.Post(fmt.Sprintf("%s/stores/%s/authorization-models", fgaURL, first.StoreID()),
		"application/json", bytes.NewBufferString(other))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("write other model: %s", resp.Status)
	}
	second, err := authz.New(ctx, fgaURL, name)
	if err != nil {
		t.Fatal(err)
	}
	if second.StoreID() != first.StoreID() {
		t.Fatalf("store changed: %s -> %s", first.StoreID(), second.StoreID())
	}
	if second.ModelID() == first.ModelID() {
		t.Fatal("model not rewritten after another model became latest")
	}
	third, err := authz.New(ctx, fgaURL, name)
	if err != nil {
		t.Fatal(err)
	}
	if third.ModelID() != second.ModelID() {
		t.Fatalf("third New wrote a model again: %s -> %s", second.ModelID(), third.ModelID())
	}
}

func TestWriteIsIdempotent(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t)
	grant := authz.Tuple{User: authz.UserObject("alice"), Relation: authz.Reader, Object: authz.ModelObject("m1")}
	for i := range 2 {
		if err := c.Write(ctx, []authz.Tuple{grant, grant}, nil); err != nil {
			t.Fatalf("write #%d: %v", i, err)
		}
	}
	if ok, err := c.Check(ctx, grant.User, grant.Relation, grant.Object); err != nil || !ok {
		t.Fatalf("check after write = %v, %v", ok, err)
	}
	for i := range 2 {
		if err := c.Write(ctx, nil, []authz.Tuple{grant}); err != nil {
			t.Fatalf("delete #%d: %v", i, err)
		}
	}
	if ok, err := c.Check(ctx, grant.User, grant.Relation, grant.Object); err != nil || ok {
		t.Fatalf("check after delete = %v, %v", ok, err)
	}
	err := c.Write(ctx, []authz.Tuple{grant}, []authz.Tuple{grant})
	if !errors.Is(err, authz.ErrInvalidRequest) {
		t.Fatalf("write and delete of one tuple: %v, want ErrInvalidRequest", err)
	}
}

func TestWriteRejectsWhatTheModelForbids(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t)
	for _, bad := range []authz.Tuple{
		{User: authz.UserObject("a"), Relation: "owner", Object: authz.ModelObject("m")},
		{User: authz.Everyone, Relation: authz.Administrator, Object: authz.ModelObject("m")},
		{User: authz.UserObject("a"), Relation: authz.Reader, Object: "spaceship:m"},
	} {
		if err := c.Write(ctx, []authz.Tuple{bad}, nil); !errors.Is(err, authz.ErrInvalidRequest) {
			t.Errorf("write %s: %v, want ErrInvalidRequest", bad, err)
		}
	}
	if _, err := c.Check(ctx, authz.UserObject("a"), "owner", authz.ModelObject("m")); !errors.Is(err, authz.ErrInvalidRequest) {
		t.Errorf("check unknown relation: %v, want ErrInvalidRequest", err)
	}
}

func TestWriteChunksAndReadPages(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t)
	const n = 250 // more than one write chunk and one read page
	var ts []authz.Tuple
	for i := range n {
		ts = append(ts, authz.Tuple{User: authz.UserObject(fmt.Sprintf("u%03d", i)), Relation: authz.Reader, Object: authz.ModelObject("big")})
	}
	if err := c.Write(ctx, ts, nil); err != nil {
		t.Fatal(err)
	}
	page, next, err := c.Read(ctx, authz.ReadFilter{Object: authz.ModelObject("big")}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page) == 0 || len(page) >= n || next == "" {
		t.Fatalf("first page: %d tuples, next %q; want a partial page and a token", len(page), next)
	}
	all, err := c.ReadAll(ctx, authz.ReadFilter{Object: authz.ModelObject("big")})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n {
		t.Fatalf("ReadAll: %d tuples, want %d", len(all), n)
	}
	users, err := c.ReadAll(ctx, authz.ReadFilter{User: authz.UserObject("u007"), Object: authz.TypeModel + ":"})
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 1 || users[0] != ts[7] {
		t.Fatalf("read by user = %v, want [%v]", users, ts[7])
	}
	// Delete 150 and write 10 more in one call: two chunks.
	var more []authz.Tuple
	for i := range 10 {
		more = append(more, authz.Tuple{User: authz.UserObject(fmt.Sprintf("v%d", i)), Relation: authz.Writer, Object: authz.ModelObject("big")})
	}
	if err := c.Write(ctx, more, ts[:150]); err != nil {
		t.Fatal(err)
	}
	all, err = c.ReadAll(ctx, authz.ReadFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n-150+10 {
		t.Fatalf("after mixed write: %d tuples, want %d", len(all), n-150+10)
	}
}

func TestObjectNames(t *testing.T) {
	cases := map[string]string{
		authz.UserObject("alice@example.com"): "user:alice@example.com",
		authz.GroupMembers("ops"):             "group:ops#member",
		authz.OrgObject("acme"):               "organization:acme",
		authz.ControllerObject("c1"):          "controller:c1",
		authz.ModelObject("m1"):               "model:m1",
		authz.OfferObject("o1"):               "applicationoffer:o1",
		authz.HubObject():                     "hub:drover",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if id, err := authz.ObjectID(authz.TypeModel, "model:m1"); err != nil || id != "m1" {
		t.Errorf("ObjectID = %q, %v", id, err)
	}
	for _, bad := range []string{"model", "model:", ":m1", "group:ops#member", "model:a:b"} {
		if _, _, err := authz.ParseObject(bad); !errors.Is(err, authz.ErrInvalidObject) {
			t.Errorf("ParseObject(%q) = %v, want ErrInvalidObject", bad, err)
		}
	}
	if _, err := authz.ObjectID(authz.TypeModel, "controller:c1"); !errors.Is(err, authz.ErrInvalidObject) {
		t.Errorf("ObjectID of wrong type = %v", err)
	}
}
