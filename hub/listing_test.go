package hub_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestVisibleModelsMatchesListObjects holds the model listing (one
// PostgreSQL query over OpenFGA's answers for organizations, controllers
// and groups; hub/listing.go) equal to what OpenFGA's ListObjects(reader,
// model) says, on random grants: direct grants of every level to users,
// groups (nested) and everyone, organization, controller and hub
// administrators.
func TestVisibleModelsMatchesListObjects(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(5, 7))

	orgs := []string{"acme", "globex"}
	var users []store.Identity
	for i := range 8 {
		users = append(users, e.user(fmt.Sprintf("u%d", i), orgs[i%2]))
	}
	var ctrls []store.Controller
	for i, org := range []string{"acme", "globex", ""} { // "" is a shared controller
		c := store.Controller{UUID: uuid.NewString(), Name: fmt.Sprintf("c%d", i), Org: org, Region: "r",
			APIAddresses: []string{"127.0.0.1:1"}}
		if err := e.st.Controllers.Upsert(ctx, c); err != nil {
			t.Fatal(err)
		}
		ctrls = append(ctrls, c)
	}
	var models []string
	for i := range 40 {
		c := ctrls[rng.IntN(len(ctrls))]
		org := c.Org
		if org == "" {
			org = orgs[rng.IntN(2)]
		}
		m := store.Model{UUID: uuid.NewString(), Name: fmt.Sprintf("m%02d", i), Org: org,
			Owner: users[rng.IntN(len(users))].ID, ControllerUUID: c.UUID}
		if err := e.st.Models.Insert(ctx, m); err != nil {
			t.Fatal(err)
		}
		models = append(models, m.UUID)
	}
	var groups []store.Group
	for i := range 3 {
		g, err := e.st.Groups.Create(ctx, orgs[i%2], fmt.Sprintf("g%d", i))
		if err != nil {
			t.Fatal(err)
		}
		groups = append(groups, g)
	}
	// g2's members are members of g1, whose members are members of g0.
	e.grant(authz.GroupMembers(groups[1].ID), authz.Member, authz.GroupObject(groups[0].ID))
	e.grant(authz.GroupMembers(groups[2].ID), authz.Member, authz.GroupObject(groups[1].ID))
	for _, u := range users[:5] {
		if err := e.st.Groups.AddMember(ctx, groups[rng.IntN(3)].ID, u.ID); err != nil {
			t.Fatal(err)
		}
	}
	levels := []authz.Relation{authz.Reader, authz.Writer, authz.Administrator}
	for range 60 {
		subject := authz.UserObject(users[rng.IntN(len(users))].ID)
		switch rng.IntN(6) {
		case 0:
			subject = authz.GroupMembers(groups[rng.IntN(3)].ID)
		case 1:
			subject = authz.Everyone
		}
		rel := levels[rng.IntN(3)]
		if subject == authz.Everyone {
			rel = authz.Reader // the model allows user:* on reader only
		}
		e.grant(subject, rel, authz.ModelObject(models[rng.IntN(len(models))]))
	}
	e.grant(authz.UserObject(users[1].ID), authz.Administrator, authz.OrgObject("globex"))
	e.grant(authz.UserObject(users[2].ID), authz.Administrator, authz.ControllerObject(ctrls[2].UUID))
	e.grant(authz.GroupMembers(groups[2].ID), authz.Administrator, authz.ControllerObject(ctrls[0].UUID))
	e.grant(authz.UserObject(users[3].ID), authz.Administrator, authz.HubObject())
	e.settle()

	for _, u := range users {
		objs, err := e.hub.Authz().ListObjects(ctx, authz.UserObject(u.ID), authz.Reader, authz.TypeModel)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, o := range objs {
			_, id, _ := authz.ParseObject(o)
			want = append(want, id)
		}
		code, body := e.do(http.MethodGet, "/v1/models", e.token(u, time.Minute, ""), nil)
		if code != http.StatusOK {
			t.Fatalf("%s: GET /v1/models = %d %s", u.Email, code, body)
		}
		var got struct{ Models []store.Model }
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i, m := range got.Models {
			ids = append(ids, m.UUID)
			if i > 0 && (m.Org < got.Models[i-1].Org || m.Org == got.Models[i-1].Org && m.Name < got.Models[i-1].Name) {
				t.Errorf("%s: listing not sorted by org and name at %s/%s", u.Email, m.Org, m.Name)
			}
		}
		slices.Sort(want)
		slices.Sort(ids)
		if !slices.Equal(ids, want) {
			t.Errorf("%s sees %d models, ListObjects says %d:\n got %v\nwant %v", u.Email, len(ids), len(want), ids, want)
		}
		t.Logf("%s sees %d of %d models", u.Email, len(ids), len(models))
	}
}

// TestModelListingStreamsLargeAnswers lists more models than fit in one
// written chunk: the answer must still be one valid, sorted document.
func TestModelListingStreamsLargeAnswers(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	admin := e.user("admin", "acme")
	c := store.Controller{UUID: uuid.NewString(), Name: "c", Org: "acme", Region: "r1", Cloud: "lxd", APIAddresses: []string{"127.0.0.1:1"}}
	if err := e.st.Controllers.Upsert(ctx, c); err != nil {
		t.Fatal(err)
	}
	const n = 400 // about 130 KB of JSON: several chunks
	for i := range n {
		m := store.Model{UUID: uuid.NewString(), Name: fmt.Sprintf("m%03d", (i*7)%n), Org: "acme", ControllerUUID: c.UUID}
		if i%2 == 0 {
			m.Owner = admin.ID
		}
		if err := e.st.Models.Insert(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	e.grant(authz.UserObject(admin.ID), authz.Administrator, authz.OrgObject("acme"))
	e.settle()
	code, body := e.do(http.MethodGet, "/v1/models", e.token(admin, time.Minute, ""), nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/models = %d %s", code, body)
	}
	if len(body) < 3*32<<10 {
		t.Fatalf("answer is %d bytes, want several chunks", len(body))
	}
	var got struct{ Models []store.Model }
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Models) != n {
		t.Fatalf("listed %d models, want %d", len(got.Models), n)
	}
	for i, m := range got.Models {
		if want := fmt.Sprintf("m%03d", i); m.Name != want {
			t.Fatalf("model %d is %s, want %s (sorted by name)", i, m.Name, want)
		}
		if m.Controller != "c" || m.ControllerUUID != c.UUID {
			t.Fatalf("model %s is on %q (%s), want c (%s)", m.Name, m.Controller, m.ControllerUUID, c.UUID)
		}
		if m.Owner != "" && (m.Owner != admin.ID || m.OwnerName != admin.Email) {
			t.Fatalf("model %s owner %q (%s), want %q (%s)", m.Name, m.OwnerName, m.Owner, admin.Email, admin.ID)
		}
		if i%97 != 0 {
			continue
		}
		// The listing, decoded from PostgreSQL's binary rows, says what the
		// single-model route says.
		e.sameAsIndexed(m)
	}
}

// sameAsIndexed checks that a listed model is what the index holds.
func (e *env) sameAsIndexed(m store.Model) {
	e.t.Helper()
	idx, err := e.st.Models.ByUUID(e.t.Context(), m.UUID)
	if err != nil {
		e.t.Fatal(err)
	}
	if !m.CreatedAt.Equal(idx.CreatedAt) || !m.UpdatedAt.Equal(idx.UpdatedAt) {
		e.t.Errorf("%s: times %v %v, index says %v %v", m.Name, m.CreatedAt, m.UpdatedAt, idx.CreatedAt, idx.UpdatedAt)
	}
	m.CreatedAt, m.UpdatedAt = idx.CreatedAt, idx.UpdatedAt
	if m != idx {
		e.t.Errorf("listed %+v\nindex  %+v", m, idx)
	}
}

// TestModelListingFollowsIndex: listings keep each model's JSON for its
// row version (listcache.go) and still say exactly what the index says
// after every kind of change — a summary, an owner's new email, a
// controller's new region and name, a model added and one deleted. The
// first listing reads every model whole (streamed), the second none, and
// the one after the changes only the rows that changed.
func TestModelListingFollowsIndex(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	admin, owner := e.user("admin", "acme"), e.user("owner", "acme")
	c := store.Controller{UUID: uuid.NewString(), Name: "c", Org: "acme", Region: "r1", Cloud: "lxd", APIAddresses: []string{"127.0.0.1:1"}}
	if err := e.st.Controllers.Upsert(ctx, c); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	add := func(name string, owned bool) string {
		t.Helper()
		m := store.Model{UUID: uuid.NewString(), Name: name, Org: "acme", ControllerUUID: c.UUID}
		if owned {
			m.Owner = owner.ID
		}
		if err := e.st.Models.Insert(ctx, m); err != nil {
			t.Fatal(err)
		}
		want[m.UUID] = true
		return m.UUID
	}
	var ids []string
	for i := range 30 {
		ids = append(ids, add(fmt.Sprintf("m%02d", i), i%5 == 0))
	}
	e.grant(authz.UserObject(admin.ID), authz.Administrator, authz.OrgObject("acme"))
	e.settle()
	tok := e.token(admin, time.Minute, "")
	list := func(wantCached, wantRead int64) {
		t.Helper()
		cached0, read0 := e.hub.ListedModels()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/models = %d %.300s, %v", resp.StatusCode, body, err)
		}
		// Read whole, the answer is sent chunked; otherwise its length is
		// known and declared.
		if chunked := wantRead == int64(len(want)); chunked != (resp.ContentLength == -1) ||
			!chunked && resp.ContentLength != int64(len(body)) {
			t.Errorf("Content-Length %d for %d bytes (read whole: %v)", resp.ContentLength, len(body), chunked)
		}
		var got struct{ Models []store.Model }
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Models) != len(want) {
			t.Errorf("listed %d models, want %d", len(got.Models), len(want))
		}
		for _, m := range got.Models {
			if !want[m.UUID] {
				t.Errorf("listed %s (%s), which is not indexed", m.Name, m.UUID)
				continue
			}
			e.sameAsIndexed(m)
		}
		cached, read := e.hub.ListedModels()
		if cached-cached0 != wantCached || read-read0 != wantRead {
			t.Errorf("listing took %d models from the cache and read %d, want %d and %d",
				cached-cached0, read-read0, wantCached, wantRead)
		}
	}
	list(0, 30)
	list(30, 0)

	sum := store.Model{UUID: ids[3], Name: "m03", Org: "acme", ControllerUUID: c.UUID, Life: "alive", Status: "blocked",
		ApplicationCount: 2, UnitCount: 5, MachineCount: 1, EventIndex: 9}
	if indexed, err := e.st.Models.UpdateSummary(ctx, sum, time.Now()); err != nil || !indexed {
		t.Fatalf("summary: indexed %v, %v", indexed, err)
	}
	if _, _, err := e.st.Identities.Login(ctx, store.Identity{Issuer: owner.Issuer, Subject: owner.Subject, Email: "owner@elsewhere.example"},
		"acme", time.Now()); err != nil { // renames the owner of six models
		t.Fatal(err)
	}
	c.Region, c.Name = "r2", "c-renamed"
	if err := e.st.Controllers.Upsert(ctx, c); err != nil { // changes no model row
		t.Fatal(err)
	}
	add("new", false)
	if err := e.st.Models.Delete(ctx, ids[7]); err != nil {
		t.Fatal(err)
	}
	delete(want, ids[7])
	list(22, 8) // read: the summary, the six renamed, the new one
	list(30, 0)

	// A listing larger than the cache is read whole every time and kept
	// out of it.
	e.hub.SetModelJSONLimit(10 * 500)
	list(0, 30)
	list(0, 30)
}

// TestListingAnotherUsersModels: GET /v1/models?user=U (drover models
// --user U, as Juju's) lists what U can read, to the administrators of U's
// organization, and only what they can read too: rita's grant on globex's
// model shows to a hub administrator, not to acme's. Anyone else is told
// nobody by that name exists.
func TestListingAnotherUsersModels(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	globex, err := f.st.Models.ByName(ctx, "globex", "prod")
	if err != nil {
		t.Fatal(err)
	}
	f.grant(authz.UserObject(f.rita.ID), authz.Reader, authz.ModelObject(globex.UUID)) // granted by globex
	root := f.hubAdmin()
	f.settle()
	names := func(tok, user string, want int) []string {
		t.Helper()
		code, b := f.do(http.MethodGet, "/v1/models?user="+url.QueryEscape(user), tok, nil)
		if code != want {
			t.Fatalf("models?user=%s: %d %s, want %d", user, code, b, want)
		}
		var out struct{ Models []struct{ Org, Name string } }
		if err := json.Unmarshal(b, &out); err != nil && want == http.StatusOK {
			t.Fatal(err)
		}
		var got []string
		for _, m := range out.Models {
			got = append(got, m.Org+"/"+m.Name)
		}
		slices.Sort(got)
		return got
	}
	if got := names(root, "rita@example.com", http.StatusOK); !slices.Equal(got, []string{"acme/prod", "globex/prod"}) {
		t.Errorf("rita's models to a hub administrator: %q", got)
	}
	if got := names(f.token(f.alice, time.Minute, ""), "rita@example.com", http.StatusOK); !slices.Equal(got, []string{"acme/prod"}) {
		t.Errorf("rita's models to acme's administrator: %q", got)
	}
	if got := names(f.token(f.rita, time.Minute, ""), f.rita.ID, http.StatusOK); !slices.Equal(got, []string{"acme/prod", "globex/prod"}) {
		t.Errorf("rita's own models by her id: %q", got)
	}
	for _, c := range []struct {
		who  store.Identity
		user string
	}{{f.will, "rita@example.com"}, {f.olga, "rita@example.com"}, {f.alice, "nobody@example.com"}} {
		names(f.token(c.who, time.Minute, ""), c.user, http.StatusNotFound)
	}
}
