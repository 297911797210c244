package tests

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestDashboardEndToEnd drives the dashboard in Chromium against the real
// `droverd dev` (PostgreSQL, OpenFGA, Dex, the hub, the controllers east
// and west, real agents running the sample charms), the hub reached
// through a TCP proxy that can drop every connection, as a load balancer
// restarting would. Each step compares the page with the API's answer
// (issue 29, "must show" 1); with DROVER_DASHBOARD_SHOTS set it saves the
// screenshots of docs/dashboard.md there.
func TestDashboardEndToEnd(t *testing.T) {
	b := newBrowser(t)
	hubAddr := testkit.FreeAddr(t)
	proxy := testkit.NewFaultProxy(t, "tcp", hubAddr)
	root := postgresRoot(t, "drover-dash-e2e-")
	s := startDevStackIn(t, filepath.Join(root, "state"), filepath.Join(root, "dev.log"),
		"--hub-listen", hubAddr, "--hub-public-url", "https://"+proxy.Addr(), "--idp-listen", testkit.FreeAddr(t),
		"--east-listen", pairAddr(t), "--west-listen", pairAddr(t), "--log-level", "warn")
	hub := s.info.HubURL
	demo := newDroverCLI(t)
	deviceLogin(t, demo, s)
	charms := filepath.Join(repoRoot(t), "charms")
	demo.ok("add-model", "dash-east", "east")
	demo.ok("add-model", "dash-west", "localhost/west")
	demo.ok("deploy", filepath.Join(charms, "kvstore"), "kvstore", "-m", "dash-east", "--config", fmt.Sprintf("port=%d", testkit.FreePort(t)))
	demo.ok("deploy", filepath.Join(charms, "webapp"), "webapp", "-m", "dash-east", "--config", fmt.Sprintf("port=%d", testkit.FreePort(t)))
	demo.ok("deploy", filepath.Join(charms, "kvstore"), "kvstore", "-m", "dash-west", "--config", fmt.Sprintf("port=%d", testkit.FreePort(t)))
	demo.ok("integrate", "webapp", "kvstore", "-m", "dash-east")
	cl := hubClient(t, demo, s)
	east := modelUUID(t, cl, "dash-east")
	waitActive(t, demo, "dash-east", "east", "kvstore", "webapp")

	loginOIDC(t, b, s, s.info.User.Email, s.info.User.Password)

	t.Run("models", func(t *testing.T) { checkModelsView(t, b.with(t), hub) })
	t.Run("controllers", func(t *testing.T) { checkControllersView(t, b.with(t), hub) })
	t.Run("live-unit", func(t *testing.T) { checkLiveUnit(t, b.with(t), demo, hub, east) })
	t.Run("drop", func(t *testing.T) { checkDrop(t, b.with(t), proxy, hub, east) })
	t.Run("graph", func(t *testing.T) { checkGraph(t, b.with(t), demo, hub, east) })
	t.Run("unit-and-logs", func(t *testing.T) { checkUnitAndLogs(t, b.with(t), hub, east) })
	t.Run("config", func(t *testing.T) { checkConfigEdit(t, b.with(t), demo, hub, east) })
	t.Run("action", func(t *testing.T) { checkAction(t, b.with(t), hub, east) })
	t.Run("audit", func(t *testing.T) { checkAuditExport(t, b.with(t), hub) })
	t.Run("compliance", func(t *testing.T) { checkCompliance(t, b.with(t), hub) })
	t.Run("reader", func(t *testing.T) { checkReader(t, demo, s, east) })
	t.Run("other-org", func(t *testing.T) { checkOtherOrg(t, s, east) })
	t.Run("migrate", func(t *testing.T) { checkMigrateFromTheDashboard(t, b.with(t), hub, modelUUID(t, cl, "dash-west")) })
}

// checkModelsView: the models list is the API's, row for row.
func checkModelsView(t *testing.T, b *browser, hub string) {
	var list struct{ Models []api.Model }
	if code := b.fetchJSON("/v1/models", &list); code != 200 || len(list.Models) < 2 {
		t.Fatalf("GET /v1/models from the page: %d, %d models", code, len(list.Models))
	}
	var want []string
	for _, m := range list.Models {
		want = append(want, m.UUID)
	}
	slices.Sort(want)
	b.open(hub, "/models")
	b.waitJS(10*time.Second, "the models table lists the API's models",
		fmt.Sprintf(`document.querySelectorAll(%q).length === %d`, byID("model-row"), len(want)))
	got := b.keys("model-row")
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("model rows %v, the API's models %v", got, want)
	}
	if c := b.text("model-count"); c != fmt.Sprint(len(want)) {
		t.Errorf("model-count %q, want %d", c, len(want))
	}
	axe(t, b)
	b.docShot("models")
}

// checkControllersView: the controllers table is the API's.
func checkControllersView(t *testing.T, b *browser, hub string) {
	var list struct {
		Controllers []struct{ Name, Region string }
	}
	if code := b.fetchJSON("/v1/controllers", &list); code != 200 || len(list.Controllers) != 2 {
		t.Fatalf("GET /v1/controllers from the page: %d %+v", code, list)
	}
	b.open(hub, "/controllers")
	b.waitJS(10*time.Second, "both controllers listed", fmt.Sprintf(`document.querySelectorAll(%q).length === 2`, byID("controller-row")))
	body := jsValue[string](b, `document.body.innerText`)
	for _, c := range list.Controllers {
		if !strings.Contains(body, c.Name) || !strings.Contains(body, c.Region) {
			t.Errorf("the controllers view lacks %s (region %s)", c.Name, c.Region)
		}
	}
	axe(t, b)
	b.docShot("controllers")
}

// checkLiveUnit: a unit added with the CLI appears on the open model page,
// without a reload, within 2 s of the CLI's answer.
func checkLiveUnit(t *testing.T, b *browser, demo *droverCLI, hub, model string) {
	b.open(hub, "/models/"+model+"?tab=units")
	b.waitJS(15*time.Second, "the model's two units", fmt.Sprintf(`document.querySelectorAll(%q).length === 2`, byID("unit-row")))
	b.waitJS(5*time.Second, "the model's stream is live", fmt.Sprintf(`document.querySelector(%q)?.textContent === "live"`, byID("conn-state")))
	jsValue[bool](b, `(window.__loaded = true)`)
	demo.ok("add-unit", "kvstore", "-m", "dash-east")
	b.waitJS(2*time.Second, "the added unit appears", fmt.Sprintf(`document.querySelectorAll(%q).length === 3`, byID("unit-row")))
	if !jsValue[bool](b, `window.__loaded === true`) {
		t.Error("the page reloaded")
	}
	axe(t, b)
	b.docShot("model-units")
}

// checkDrop: the hub's connections drop; the page says so, resumes, and
// shows every unit once.
func checkDrop(t *testing.T, b *browser, proxy *testkit.FaultProxy, hub, model string) {
	b.open(hub, "/models/"+model+"?tab=units")
	b.waitJS(15*time.Second, "three units, live", fmt.Sprintf(`document.querySelectorAll(%q).length === 3 && document.querySelector(%q)?.textContent === "live"`,
		byID("unit-row"), byID("conn-state")))
	b.recordConnStates()
	proxy.Drop()
	b.waitJS(30*time.Second, "reconnecting, then live again",
		`window.__connStates.includes("reconnecting") && window.__connStates.at(-1) === "live"`)
	keys := b.keys("unit-row")
	uniq := slices.Compact(slices.Sorted(slices.Values(keys)))
	if len(keys) != 3 || len(uniq) != 3 {
		t.Errorf("unit rows after the resync: %v", keys)
	}
	t.Logf("connection states: %v", jsValue[[]string](b, `window.__connStates`))
}

// checkGraph: the graph's nodes are the model's applications, its edges
// the API's relations.
func checkGraph(t *testing.T, b *browser, demo *droverCLI, hub, model string) {
	fs, err := statusOf(demo, "dash-east")
	if err != nil {
		t.Fatal(err)
	}
	b.open(hub, "/models/"+model+"?tab=graph")
	b.waitJS(15*time.Second, "the graph", fmt.Sprintf(`document.querySelectorAll(%q).length === %d`, byID("graph-node"), len(fs.Applications)))
	nodes := jsValue[[]string](b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.dataset.app)`, byID("graph-node")))
	var apps []string
	for name := range fs.Applications {
		apps = append(apps, name)
	}
	if !slices.Equal(slices.Sorted(slices.Values(nodes)), slices.Sorted(slices.Values(apps))) {
		t.Errorf("graph nodes %v, applications %v", nodes, apps)
	}
	edges := jsValue[[]string](b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.dataset.relation)`, byID("graph-edge")))
	var rels []string
	for _, r := range fs.Relations {
		rels = append(rels, fmt.Sprint(r.ID))
	}
	if !slices.Equal(slices.Sorted(slices.Values(edges)), slices.Sorted(slices.Values(rels))) {
		t.Errorf("graph edges %v, relations %v", edges, rels)
	}
	axe(t, b)
	b.docShot("model-graph")
}

// checkUnitAndLogs: a unit's drawer shows its relation data as its hooks
// see it, and the debug-log tail shows the model's hooks, filtered.
func checkUnitAndLogs(t *testing.T, b *browser, hub, model string) {
	b.open(hub, "/models/"+model+"?tab=units&unit=webapp/0")
	b.waitJS(15*time.Second, "the unit's relation data", fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "").includes("kvstore/0")`,
		byID("relation-info")))
	axe(t, b)
	b.docShot("unit-detail")
	b.open(hub, "/models/"+model+"?tab=logs")
	b.waitJS(15*time.Second, "the debug log", fmt.Sprintf(`document.querySelectorAll(%q).length > 0`, byID("log-line")))
	b.set("log-entity", "unit-webapp-0")
	b.waitJS(10*time.Second, "only webapp/0's lines", fmt.Sprintf(`(() => {
		const ls = [...document.querySelectorAll(%q)];
		return ls.length > 0 && ls.every(l => l.textContent.includes("unit-webapp-0"));
	})()`, byID("log-line")))
	axe(t, b)
	b.docShot("debug-log")
}

// checkConfigEdit: a config change made in the form, through its diff, is
// what `drover config` reads.
func checkConfigEdit(t *testing.T, b *browser, demo *droverCLI, hub, model string) {
	b.open(hub, "/models/"+model+"?tab=operate&app=webapp")
	b.set("config-title", "Edited in the dashboard")
	b.click("edit-config")
	b.waitJS(5*time.Second, "the diff", fmt.Sprintf(`document.querySelectorAll(%q).length === 1`, byID("config-diff-row")))
	if d := b.text("config-diff"); !strings.Contains(d, "Drover demo") || !strings.Contains(d, "Edited in the dashboard") {
		t.Errorf("the diff before saving: %q", d)
	}
	axe(t, b)
	b.docShot("operate-config")
	b.click("save-config")
	b.waitJS(10*time.Second, "saved", fmt.Sprintf(`!!document.querySelector(%q)`, byID("config-saved")))
	if out := strings.TrimSpace(demo.ok("config", "webapp", "title", "-m", "dash-east")); out != "Edited in the dashboard" {
		t.Errorf("drover config webapp title after the dashboard's edit: %q", out)
	}
}

// checkAction: an action run from its form shows its result.
func checkAction(t *testing.T, b *browser, hub, model string) {
	b.open(hub, "/models/"+model+"?tab=operate&app=kvstore")
	b.set("action-name", "set")
	b.set("action-param-key", "dashboard")
	b.set("action-param-value", "yes")
	b.click("run-action")
	b.waitJS(time.Minute, "the action's result", fmt.Sprintf(`document.querySelector(%q)?.dataset.status === "completed"`, byID("action-result")))
	axe(t, b)
	b.docShot("operate-action")
}

// checkAuditExport: the audit view filtered by operation lists the API's
// entries, and its CSV download holds the same ones.
func checkAuditExport(t *testing.T, b *browser, hub string) {
	var page struct{ Entries []struct{ ID int64 } }
	if code := b.fetchJSON("/v1/audit?operation=deploy&limit=1000", &page); code != 200 || len(page.Entries) < 3 {
		t.Fatalf("GET /v1/audit?operation=deploy: %d, %d entries", code, len(page.Entries))
	}
	var want []string
	for _, e := range page.Entries {
		want = append(want, fmt.Sprint(e.ID))
	}
	b.open(hub, "/audit?operation=deploy")
	b.waitJS(10*time.Second, "the filtered audit", fmt.Sprintf(`document.querySelectorAll(%q).length === %d`, byID("audit-row"), len(want)))
	if got := b.keys("audit-row"); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("audit rows %v, the API's entries %v", got, want)
	}
	axe(t, b)
	b.docShot("audit")
	dir := t.TempDir()
	b.downloadsTo(dir)
	b.click("audit-export-csv")
	name, data := b.downloaded(dir)
	if !strings.HasSuffix(name, ".csv") {
		t.Errorf("the export's file name %q", name)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("the CSV export: %v, %d rows:\n%s", err, len(rows), data)
	}
	col := slices.Index(rows[0], "id")
	if col < 0 {
		t.Fatalf("the CSV export has no id column: %v", rows[0])
	}
	var got []string
	for _, r := range rows[1:] {
		got = append(got, r[col])
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("CSV export ids %v, the API's %v", got, want)
	}
}

// checkCompliance: the charms in use are the API's.
func checkCompliance(t *testing.T, b *browser, hub string) {
	var inv api.CharmInventory
	if code := b.fetchJSON("/v1/compliance/charms", &inv); code != 200 || len(inv.Charms) < 3 {
		t.Fatalf("GET /v1/compliance/charms: %d %+v", code, inv)
	}
	b.open(hub, "/compliance")
	b.waitJS(10*time.Second, "the charms in use", fmt.Sprintf(`document.querySelectorAll(%q).length === %d`, byID("charm-row"), len(inv.Charms)))
	axe(t, b)
	b.docShot("compliance")
	b.open(hub, "/access")
	b.waitJS(10*time.Second, "the access view with its grants", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q)`,
		byID("grant-form"), byID("grants-table")))
	axe(t, b)
	b.docShot("access")
	b.open(hub, "/migrations")
	b.waitJS(10*time.Second, "the migrations view", fmt.Sprintf(`!!document.querySelector(%q)`, byID("migrations-table")))
	axe(t, b)
	b.docShot("migrations")
}

// checkMigrateFromTheDashboard: a migration started from the migrations
// view (west to east, the model's agent following) shows its phases to
// DONE, and the API agrees.
func checkMigrateFromTheDashboard(t *testing.T, b *browser, hub, model string) {
	b.open(hub, "/migrations")
	b.waitJS(10*time.Second, "the model among those to migrate", fmt.Sprintf(`[...document.querySelectorAll(%q)].some(o => o.value === %q)`,
		byID("migrate-model")+" option", model))
	b.set("migrate-model", model)
	b.set("migrate-target", "east")
	b.click("migrate")
	done := fmt.Sprintf(`document.querySelector(%q)?.textContent === "DONE"`, byID("migration-phase-now"))
	if !b.within(3*time.Minute, done) {
		var list []api.Migration
		b.fetchJSON("/v1/migrations", &list)
		t.Fatalf("the migration's timeline shows %q after 3 minutes, at %s; the API's migrations: %+v",
			b.text("migration-phase-now"), b.location(), list)
	}
	axe(t, b)
	b.docShot("migration")
	var list []api.Migration
	if code := b.fetchJSON("/v1/migrations", &list); code != 200 {
		t.Fatalf("GET /v1/migrations: %d", code)
	}
	for _, m := range list {
		if m.ModelUUID == model && m.Phase == "DONE" && m.TargetController == "east" {
			return
		}
	}
	t.Errorf("no DONE migration of %s to east in the API's list: %+v", model, list)
}

// checkReader: a reader of the model sees it with no edit control, and a
// change forced from the page is refused 403.
func checkReader(t *testing.T, demo *droverCLI, s *devStack, model string) {
	// The reader has logged in once (the grant names a known identity).
	r := newBrowser(t)
	loginOIDC(t, r, s, s.info.Reader.Email, s.info.Reader.Password)
	demo.ok("grant", s.info.Reader.Email, "read", "dash-east")
	r.open(s.info.HubURL, "/models/"+model+"?tab=apps")
	r.waitJS(15*time.Second, "the model's applications", fmt.Sprintf(`document.querySelectorAll(%q).length === 2`, byID("app-row")))
	r.waitJS(5*time.Second, "read-only", fmt.Sprintf(`!!document.querySelector(%q)`, byID("read-only")))
	for _, id := range []string{"tab-operate", "edit-config", "run-action", "scale", "deploy", "integrate"} {
		if n := r.count(id); n != 0 {
			t.Errorf("a reader sees %d %s", n, id)
		}
	}
	body, _ := json.Marshal(map[string]any{"set": map[string]string{"title": "forced"}})
	if code := r.forceCall("PATCH", "/v1/models/"+model+"/applications/webapp/config", string(body)); code != 403 {
		t.Errorf("a reader's forced config change: %d, want 403", code)
	}
}

// checkOtherOrg: a person of another organization sees none of these
// models, in the page or through the API.
func checkOtherOrg(t *testing.T, s *devStack, model string) {
	o := newBrowser(t)
	loginOIDC(t, o, s, s.info.OtherOrgUser.Email, s.info.OtherOrgUser.Password)
	o.open(s.info.HubURL, "/models")
	o.waitJS(10*time.Second, "the models view", fmt.Sprintf(`document.querySelector(%q)?.textContent === "0"`, byID("model-count")))
	if n := o.count("model-row"); n != 0 {
		t.Errorf("another organization's member sees %d model rows", n)
	}
	var list struct{ Models []api.Model }
	if code := o.fetchJSON("/v1/models", &list); code != 200 || len(list.Models) != 0 {
		t.Errorf("GET /v1/models as another organization's member: %d %+v", code, list.Models)
	}
	if code := o.fetchJSON("/v1/models/"+url.PathEscape(model)+"/status", nil); code != 404 && code != 403 {
		t.Errorf("GET the model's status as another organization's member: %d", code)
	}
}

// TestDashboardOnAController: a standalone controller serves the
// dashboard at its own address; its administrator signs in with the
// controller's credential in the app's form, and the models view and a
// model's live page follow the controller (issue 29: "served at / by the
// hub and by a standalone spoke").
func TestDashboardOnAController(t *testing.T) {
	b := newBrowser(t)
	c := startProcClusterWith(t, 1, nil)
	cl := c.client(0)
	m, err := cl.AddModel(t.Context(), api.AddModelRequest{Name: "standalone"})
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + c.nodes[0].listen
	b.open(base, "/models")
	b.waitJS(15*time.Second, "the login form", fmt.Sprintf(`!!document.querySelector(%q)`, byID("login-form")))
	b.setCSS("#login-user", c.cred.User)
	b.setCSS("#login-password", c.cred.Password)
	b.click("login-submit")
	b.waitJS(15*time.Second, "the controller's models", fmt.Sprintf(`[...document.querySelectorAll(%q)].some(r => r.dataset.key === %q)`,
		byID("model-row"), m.UUID))
	axe(t, b)
	b.open(base, "/models/"+m.UUID+"?tab=apps")
	b.waitJS(15*time.Second, "the model's stream is live", fmt.Sprintf(`document.querySelector(%q)?.textContent === "live"`, byID("conn-state")))
	// A change with the cookie from the page works.
	if code := b.forceCall("PATCH", "/v1/models/"+m.UUID+"/config", `{"set":{"logging-config":"<root>=DEBUG"}}`); code/100 != 2 {
		t.Errorf("a config change from the controller's own page: %d", code)
	}
	cfg, err := cl.Model(m.UUID).Config(t.Context())
	if err != nil || cfg["logging-config"] != "<root>=DEBUG" {
		t.Errorf("the model's config after the page's change: %v %v", cfg, err)
	}
}
