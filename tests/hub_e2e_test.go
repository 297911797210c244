package tests

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestHubEndToEnd is the hub's acceptance test with real processes: the
// `droverd dev` stack (PostgreSQL, OpenFGA, Dex, hub, spokes east and
// west), the demo user logging in with the device flow through the built
// drover binary, models placed by region on both spokes, sample charms
// deployed and integrated through the hub until their units are active, a
// status watch through the hub's websocket, tenant isolation for a service
// account of another organization, and the audit log of every step.
func TestHubEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes (PostgreSQL, hub, two spokes, agents)")
	}
	s := startDevStack(t)
	demo := newDroverCLI(t)
	if out := deviceLogin(t, demo, s); !strings.Contains(out, "Logged in to hub as "+s.info.User.Email) {
		t.Fatalf("drover login output:\n%s", out)
	}

	// Placement by region: one model on each spoke, the place given as
	// Juju users give it (a region, or CLOUD/REGION).
	models := map[string]string{"east": "e2e-east", "west": "e2e-west"} // region -> model name
	// It says where the hub placed it, as Juju names a model's place.
	if _, errs, code := demo.run("add-model", "e2e-east", "east"); code != 0 ||
		!strings.Contains(errs, `Added 'e2e-east' model on localhost/east (controller "east" behind hub `) {
		t.Fatalf("add-model e2e-east east: exit %d, %s", code, errs)
	}
	demo.ok("add-model", "e2e-west", "localhost/west")
	cl := hubClient(t, demo, s)
	idx, err := cl.Models(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	uuids := map[string]string{} // model name -> UUID
	for _, m := range idx {
		uuids[m.Name] = m.UUID
	}
	for region, name := range models {
		if uuids[name] == "" {
			t.Fatalf("model %s (region %s) not in the hub's index: %+v", name, region, idx)
		}
	}

	// Deploy and integrate the sample charms through the hub: kvstore and
	// webapp on east, kvstore on west.
	charms := filepath.Join(repoRoot(t), "charms")
	east, west := models["east"], models["west"]
	demo.ok("deploy", filepath.Join(charms, "kvstore"), "kvstore", "-m", east, "--config", fmt.Sprintf("port=%d", testkit.FreePort(t)))
	demo.ok("deploy", filepath.Join(charms, "webapp"), "webapp", "-m", east, "--config", fmt.Sprintf("port=%d", testkit.FreePort(t)))
	demo.ok("deploy", filepath.Join(charms, "kvstore"), "kvstore", "-m", west, "--config", fmt.Sprintf("port=%d", testkit.FreePort(t)))
	demo.ok("integrate", "webapp", "kvstore", "-m", east)
	// Reading a charm's actions goes through the model's route.
	if out := demo.ok("actions", "kvstore", "-m", east); !strings.Contains(out, "get") {
		t.Errorf("actions through the hub:\n%s", out)
	}
	// models at a hub: one request, with the controller and counts from
	// the index.
	if out := demo.ok("models"); !strings.Contains(out, "Controller") || !strings.Contains(out, east) {
		t.Errorf("models through the hub:\n%s", out)
	}
	if out := demo.ok("show-model", east); !regexp.MustCompile(`controller-uuid: [0-9a-f]{8}-`).MatchString(out) ||
		strings.Contains(out, "0001-01-01") || !strings.Contains(out, "since:") ||
		!strings.Contains(out, "region: east") || !strings.Contains(out, "logging-config") ||
		!regexp.MustCompile(`(?m)^  users:\n    `+regexp.QuoteMeta(s.info.User.Email)+`:\n      access: admin\n`).MatchString(out) {
		t.Errorf("show-model through the hub (its owner sees herself as its admin):\n%s", out)
	}
	// show-controller at a hub: the caller's access there, and the
	// controllers behind it with their regions and health.
	if out := demo.ok("show-controller"); !strings.Contains(out, "    access: superuser\n") ||
		!regexp.MustCompile(`    agent-version: \d+\.\d+\.\d+\n`).MatchString(out) ||
		!regexp.MustCompile(`(?s)  controllers:\n    east:\n.*region: east\n.*status: connected\n.*    west:\n`).MatchString(out) {
		t.Errorf("show-controller at the hub:\n%s", out)
	}
	// A controller behind the hub, by the name 'controllers' lists it under.
	if out := demo.ok("show-controller", "west"); !strings.Contains(out, "west:\n") || !strings.Contains(out, "  hub: ") ||
		!strings.Contains(out, "    region: west\n") || !strings.Contains(out, "    status: connected\n") {
		t.Errorf("show-controller west (behind the hub):\n%s", out)
	}
	if _, errs, code := demo.run("show-controller", "nowhere"); code == 0 || !strings.Contains(errs, `controller "nowhere" not found`) {
		t.Errorf("show-controller nowhere: exit %d, %s", code, errs)
	}
	if out := demo.ok("clouds"); !regexp.MustCompile(`(?m)^localhost\s+east, west\s+east, west$`).MatchString(out) {
		t.Errorf("clouds at the hub:\n%s", out)
	}
	if out := demo.ok("controllers"); !regexp.MustCompile(`(?m)^hub\*.*\s\d+\.\d+\.\d+\s*$`).MatchString(out) {
		t.Errorf("controllers: the hub's row without its version:\n%s", out)
	}
	// Groups by name: a group granted read shows among the model's users.
	org := s.info.User.Org
	demo.ok("add-group", org+"/ops")
	demo.ok("add-member", org+"/ops", s.info.User.Email)
	demo.ok("grant", "--group", org+"/ops", "read", west)
	if out := demo.ok("show-model", west); !strings.Contains(out, "    group ops:\n      access: read\n      kind: group\n") {
		t.Errorf("show-model after granting a group read:\n%s", out)
	}
	if out := demo.ok("groups"); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(org) + `\s+ops\s+1\s`).MatchString(out) {
		t.Errorf("groups after adding one with a member:\n%s", out)
	}
	if out := demo.ok("show-group", org+"/ops"); !strings.Contains(out, "    - name: "+s.info.User.Email+"\n") ||
		!strings.Contains(out, "    - level: read\n      target: model "+west+"\n") {
		t.Errorf("show-group %s/ops:\n%s", org, out)
	}
	demo.ok("remove-member", org+"/ops", s.info.User.Email)
	// As in JAAS, access for someone who has never logged in, by email.
	if _, errs, code := demo.run("grant", "newcomer@example.com", "read", west); code != 0 ||
		!strings.Contains(errs, "newcomer@example.com has not logged in yet") {
		t.Errorf("grant to someone who never logged in: exit %d, %s", code, errs)
	}
	if out := demo.ok("users"); !regexp.MustCompile(`(?m)^newcomer@example\.com\s+user\s+\S+\s+.*never connected$`).MatchString(out) ||
		!strings.Contains(out, s.info.User.Email) {
		t.Errorf("users after granting a newcomer:\n%s", out)
	}
	demo.ok("revoke", "newcomer@example.com", "read", west)
	demo.ok("rename-group", org+"/ops", "sre")
	if out := demo.ok("show-model", west); !strings.Contains(out, "    group sre:\n      access: read\n") {
		t.Errorf("show-model after renaming the group:\n%s", out)
	}
	demo.ok("remove-group", org+"/sre", "-y")
	if out := demo.ok("show-model", west); strings.Contains(out, "group sre") {
		t.Errorf("show-model after removing the group:\n%s", out)
	}
	for model, apps := range map[string][]string{east: {"kvstore", "webapp"}, west: {"kvstore"}} {
		var last *api.FullStatus
		testkit.EventuallyWithin(t, 2*time.Minute, func() (bool, error) {
			fs, err := statusOf(demo, model)
			if err != nil {
				return false, err
			}
			last = fs
			if want := map[string]string{east: "east", west: "west"}[model]; fs.Controller.Name != want {
				return false, fmt.Errorf("model %s answered by controller %q, want %q (placement by region)", model, fs.Controller.Name, want)
			}
			return unitsActive(fs, 1, apps...), nil
		}, "units of %v active in %s (through the hub); last:\n%s", apps, model, describeStatusLazy(&last))
	}

	// Repeated reads on one keep-alive connection: from the second on, the
	// hub serves them on the connection itself (hub/takeover.go).
	for range 3 {
		fs, err := cl.Model(uuids[east]).Status(t.Context())
		if err != nil || fs.Applications["webapp"].Charm == "" || fs.Applications["kvstore"].Charm == "" {
			t.Fatalf("status through the hub's API: %v %s", err, describeStatusLazy(&fs))
		}
	}
	if n := hubMetric(t, s, "drover_hub_taken_connections_total"); n < 1 {
		t.Errorf("the hub took no connection over after repeated reads (%v)", n)
	}
	// The hub keeps each status and asks the controller only whether it
	// changed (hub/statuscache.go): repeated reads of a settled model are
	// answered from the copy the controller confirmed, and are the
	// controller's status (the same applications, units and messages).
	before := hubMetric(t, s, "drover_hub_status_revalidated_total")
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		fs, err := cl.Model(uuids[east]).Status(t.Context())
		if err != nil || !unitsActive(fs, 1, "webapp", "kvstore") {
			return false, fmt.Errorf("status through the hub: %v %s", err, describeStatusLazy(&fs))
		}
		return hubMetric(t, s, "drover_hub_status_revalidated_total") > before, nil
	}, "a status read through the hub answered from its revalidated copy")

	// Refresh through the hub: west's kvstore takes a new version of its
	// charm (its config kept) and settles again at revision 1.
	kv2 := filepath.Join(t.TempDir(), "kvstore")
	if err := os.CopyFS(kv2, os.DirFS(filepath.Join(charms, "kvstore"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kv2, "REFRESHED"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := demo.ok("refresh", "kvstore", "-m", west, "--path", kv2); !strings.Contains(out, `Added local charm "kvstore", revision 1, to the model`) ||
		strings.Contains(out, "dropped") {
		t.Errorf("refresh through the hub:\n%s", out)
	}
	var refreshed *api.FullStatus
	testkit.EventuallyWithin(t, 2*time.Minute, func() (bool, error) {
		fs, err := statusOf(demo, west)
		refreshed = fs
		if err != nil || fs.Applications["kvstore"].CharmRev != 1 || !unitsActive(fs, 1, "kvstore") {
			return false, err
		}
		log, _, _ := demo.run("show-status-log", "kvstore/0", "-m", west, "--type", "juju-unit", "-n", "100", "--format", "json")
		return strings.Contains(log, "running upgrade-charm hook"), nil
	}, "kvstore ran upgrade-charm and is active again on revision 1 in %s; last:\n%s", west, describeStatusLazy(&refreshed))

	// exec through the hub (demo administers the model): the command runs
	// in the refreshed unit's charm directory.
	if out, errs, code := demo.run("exec", "--unit", "kvstore/0", "-m", west, "--", "cat", "REFRESHED"); code != 0 || out != "2\n" {
		t.Errorf("exec through the hub: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	// show-unit through the hub: webapp/0's relation with kvstore, with
	// kvstore/0's bag (its address) as webapp's hooks read it.
	if out := demo.ok("show-unit", "webapp/0", "-m", east); !strings.Contains(out, "webapp/0:\n  charm: local:webapp-0\n") ||
		!regexp.MustCompile(`(?s)endpoint: db\n\s+related-endpoint: kv\n.*related-units:\n\s+kvstore/0:\n\s+in-scope: true\n\s+data:\n.*ingress-address: 127\.0\.0\.1`).MatchString(out) {
		t.Errorf("show-unit webapp/0 through the hub:\n%s", out)
	}

	// Watch through the hub's websocket: a config change arrives as a delta.
	watchConfigChange(t, cl, demo, uuids[east], east)

	// A service account of another organization sees none of it.
	checkOtherTenant(t, s, uuids[east], uuids[west])
	checkSharedModel(t, demo, s, uuids[west])

	checkAudit(t, demo, s, uuids[east], uuids[west])

	// Destroying a model through the hub waits for its units' teardown and
	// its machines' release, and ends when the model is gone.
	demo.ok("destroy-model", west, "-y", "--timeout", "2m")
	if out := demo.ok("models"); strings.Contains(out, west) {
		t.Errorf("%s still listed after destroy-model:\n%s", west, out)
	}

	checkRemoveController(t, demo, s, east)
	checkDisableUser(t, demo, s)
	checkRevokedKey(t, demo, s, east)
}

// checkRevokedKey: after 'drover rotate-signing-key --revoke-previous', a
// copy of the demo user's token is refused, while drover renews the
// session by itself and goes on, through the hub to the controller.
func checkRevokedKey(t *testing.T, demo *droverCLI, s *devStack, model string) {
	t.Helper()
	copied := hubClient(t, demo, s)
	out := demo.ok("rotate-signing-key", "--revoke-previous", "-y")
	if !strings.Contains(out, "The hub signs with key ") || !strings.Contains(out, "Revoked: ") {
		t.Errorf("rotate-signing-key --revoke-previous:\n%s", out)
	}
	if err := copied.Call(ctxFor(t, 30*time.Second), http.MethodGet, "/v1/whoami", nil, nil, nil); apiStatus(err) != http.StatusUnauthorized {
		t.Errorf("a copy of the demo user's token after the revocation: %v, want 401", err)
	}
	if out := demo.ok("status", "-m", model); !strings.Contains(out, "kvstore") {
		t.Errorf("status through the hub after the revocation:\n%s", out)
	}
	if out := demo.ok("signing-keys"); strings.Count(out, "current") != 1 || strings.Contains(out, "retired") {
		t.Errorf("signing-keys after the revocation:\n%s", out)
	}
}

// checkDisableUser: a hub administrator disables a service account, whose
// next call is refused, saying so, as is its login; enabled again, it
// works.
func checkDisableUser(t *testing.T, demo *droverCLI, s *devStack) {
	t.Helper()
	sa := s.info.ServiceAccounts[1]
	ci := newDroverCLI(t)
	ci.ok("login", s.info.HubURL, "--ca", s.info.CAFile, "--client-id", sa.ClientID, "--client-secret", sa.ClientSecret)
	if out := ci.ok("show-user"); !strings.HasPrefix(out, sa.ClientID+":\n") || !strings.Contains(out, "  kind: service-account\n") {
		t.Errorf("show-user as %s:\n%s", sa.ClientID, out)
	}
	demo.ok("disable-user", sa.ClientID)
	if out := demo.ok("show-user", sa.ClientID); !strings.Contains(out, "  disabled: true\n") {
		t.Errorf("show-user %s once disabled:\n%s", sa.ClientID, out)
	}
	if out := demo.ok("users"); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sa.ClientID) + ` \(disabled\)\s`).MatchString(out) {
		t.Errorf("users after disable-user %s:\n%s", sa.ClientID, out)
	}
	for _, args := range [][]string{{"models"}, {"login", "--client-id", sa.ClientID, "--client-secret", sa.ClientSecret}} {
		if _, errs, code := ci.run(args...); code == 0 || !strings.Contains(errs, "user "+sa.ClientID+" is disabled") {
			t.Errorf("%s as a disabled service account: exit %d, %s", args[0], code, errs)
		}
	}
	demo.ok("enable-user", sa.ClientID)
	ci.ok("login", "--client-id", sa.ClientID, "--client-secret", sa.ClientSecret)
	ci.ok("models")
}

// checkRemoveController: the hub refuses to forget a controller that hosts
// a model, naming it; forced, it forgets both (the model keeps running);
// registered again, the controller's model is listed again.
func checkRemoveController(t *testing.T, demo *droverCLI, s *devStack, model string) {
	t.Helper()
	// The model is demo's own: named by its name alone, as drover does.
	if _, errs, code := demo.run("remove-controller", "east", "-y"); code == 0 ||
		!strings.Contains(errs, "controller east still hosts 1 model ("+model+")") {
		t.Errorf("remove-controller east while it hosts %s: exit %d, %s", model, code, errs)
	}
	if out := demo.ok("remove-controller", "east", "--force", "-y"); !strings.Contains(out, "forgot the models on it, which keep running there: "+model) {
		t.Errorf("remove-controller --force:\n%s", out)
	}
	if out := demo.ok("controllers"); regexp.MustCompile(`(?m)^\s*east\s`).MatchString(out) {
		t.Errorf("controllers still lists east:\n%s", out)
	}
	if out := demo.ok("models"); strings.Contains(out, model) {
		t.Errorf("%s still listed after its controller was removed:\n%s", model, out)
	}
	var ctl struct{ URL, DataDir string }
	for _, c := range s.info.Controllers {
		if c.Name == "east" {
			ctl.URL, ctl.DataDir = c.URL, c.DataDir
		}
	}
	demo.ok("add-controller", "east", ctl.URL, "--ca", filepath.Join(ctl.DataDir, "tls", "ca.crt"), "--region", "east")
	testkit.EventuallyWithin(t, time.Minute, func() (bool, error) {
		return strings.Contains(demo.ok("models"), model), nil
	}, "%s listed again once east is registered again", model)
}

// checkSharedModel: granted read on e2e-west, the other organization's
// service account sees it as OWNER/e2e-west (it has an e2e-west of its
// own), and each name means the model it names, current model included.
func checkSharedModel(t *testing.T, demo *droverCLI, s *devStack, westUUID string) {
	t.Helper()
	sa, owner := s.info.ServiceAccounts[1], s.info.User.Email
	demo.ok("grant", sa.ClientID, "read", "e2e-west")
	// A script logs in with the credentials in its environment.
	other := newDroverCLI(t)
	other.extra = []string{"DROVER_CLIENT_ID=" + sa.ClientID, "DROVER_CLIENT_SECRET=" + sa.ClientSecret}
	if out, errs, code := other.run("login", s.info.HubURL, "--ca", s.info.CAFile); code != 0 || !strings.Contains(errs+out, "Logged in to hub as "+sa.ClientID) {
		t.Fatalf("login with DROVER_CLIENT_ID/SECRET: exit %d: %s%s", code, out, errs)
	}
	other.ok("add-model", "e2e-west")
	if out := other.ok("models"); !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(owner)+`/e2e-west\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^e2e-west\*\s`).MatchString(out) {
		t.Errorf("models as %s, with a model granted and one of its own of the same name:\n%s", sa.ClientID, out)
	}
	statusUUID := func() string {
		var st struct {
			Model struct {
				UUID string `json:"uuid"`
			} `json:"model"`
		}
		if err := json.Unmarshal([]byte(other.ok("status", "--format", "json")), &st); err != nil {
			t.Fatal(err)
		}
		return st.Model.UUID
	}
	other.ok("switch", owner+"/e2e-west")
	if got := statusUUID(); got != westUUID {
		t.Errorf("after switching to %s/e2e-west, status is of %s", owner, got)
	}
	other.ok("switch", "e2e-west")
	if got := statusUUID(); got == westUUID || got == "" {
		t.Errorf("after switching to its own e2e-west, status is of %q", got)
	}
	other.ok("destroy-model", "e2e-west", "-y", "--no-wait")
	demo.ok("revoke", sa.ClientID, "read", "e2e-west")
}

// describeStatusLazy renders the last status seen when a wait fails.
type lazyStatus struct{ fs **api.FullStatus }

func (l lazyStatus) String() string { return describeStatus(*l.fs) }

func describeStatusLazy(fs **api.FullStatus) fmt.Stringer { return lazyStatus{fs} }

func watchConfigChange(t *testing.T, cl *api.Client, demo *droverCLI, uuid, model string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w, err := cl.Model(uuid).Watch(ctx, 0)
	if err != nil {
		t.Fatalf("watch through the hub: %v", err)
	}
	defer w.Close()
	f, err := w.Next(ctx)
	if err != nil || f.Type != api.FrameReset || f.Status == nil || len(f.Status.Applications["webapp"].Units) != 1 {
		t.Fatalf("first watch frame: %+v, %v", f, err)
	}
	demo.ok("config", "webapp", "title=changed through the hub", "-m", model)
	for {
		f, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("watch: no delta for the webapp config change: %v", err)
		}
		for _, d := range f.Deltas {
			if d.Kind == "application" && d.Key == "webapp" {
				b, _ := json.Marshal(d.Object)
				if strings.Contains(string(b), "changed through the hub") {
					return
				}
			}
		}
	}
}

func checkOtherTenant(t *testing.T, s *devStack, eastUUID, westUUID string) {
	t.Helper()
	sa := s.info.ServiceAccounts[1]
	if sa.Org == s.info.User.Org {
		t.Fatalf("service account %s is in the demo user's org %s", sa.ClientID, sa.Org)
	}
	other := newDroverCLI(t)
	other.ok("login", s.info.HubURL, "--ca", s.info.CAFile, "--client-id", sa.ClientID, "--client-secret", sa.ClientSecret)
	var cs struct {
		Controllers map[string]struct {
			User   string `json:"user"`
			Access string `json:"access"`
		} `json:"controllers"`
	}
	if err := json.Unmarshal([]byte(other.ok("controllers", "--format", "json")), &cs); err != nil {
		t.Fatalf("controllers as %s: %v", sa.ClientID, err)
	}
	if len(cs.Controllers) != 1 {
		t.Errorf("%s's controllers: %+v, want the hub alone", sa.ClientID, cs.Controllers)
	}
	for name, c := range cs.Controllers { // Juju's levels: a tenant's account logs in, no more
		if c.User != sa.ClientID || c.Access != "login" {
			t.Errorf("%s's account on %s: %+v, want user %s with access login", sa.ClientID, name, c, sa.ClientID)
		}
	}
	// Juju's habits: after logout, calls say so, and 'login' alone (with
	// the service account's credentials) logs in to the same hub again.
	// The session ends at the hub: a copy of its token no longer works.
	copied := hubClient(t, other, s)
	other.ok("logout")
	if err := copied.Call(ctxFor(t, 30*time.Second), http.MethodGet, "/v1/whoami", nil, nil, nil); apiStatus(err) != http.StatusUnauthorized {
		t.Errorf("a copy of %s's token after logout: %v, want 401", sa.ClientID, err)
	}
	for _, cmd := range []string{"models", "status"} {
		if _, stderr, code := other.run(cmd); code == 0 || !strings.Contains(stderr, "not logged in") {
			t.Errorf("%s after logout: exit %d, %s", cmd, code, stderr)
		}
	}
	other.ok("login", "--client-id", sa.ClientID, "--client-secret", sa.ClientSecret)
	if out := other.ok("models"); !regexp.MustCompile(`Model\s+Controller\s+Cloud/Region`).MatchString(out) {
		t.Errorf("an empty listing at a hub keeps the hub's columns:\n%s", out)
	}
	var ms struct {
		Models []map[string]any `json:"models"`
	}
	if err := json.Unmarshal([]byte(other.ok("models", "--format", "json")), &ms); err != nil {
		t.Fatalf("models as %s: %v", sa.ClientID, err)
	}
	if len(ms.Models) != 0 {
		t.Errorf("%s (org %s) sees models: %+v", sa.ClientID, sa.Org, ms)
	}
	cl := hubClient(t, other, s)
	for _, uuid := range []string{eastUUID, westUUID} {
		ctx := ctxFor(t, 30*time.Second)
		if _, err := cl.Model(uuid).Info(ctx); apiStatus(err) != http.StatusNotFound {
			t.Errorf("GET model %s as %s: %v, want 404", uuid, sa.ClientID, err)
		}
		if _, err := cl.Model(uuid).Status(ctx); apiStatus(err) != http.StatusNotFound {
			t.Errorf("status of %s as %s: %v, want 404", uuid, sa.ClientID, err)
		}
		_, err := cl.Model(uuid).SetApplicationConfig(ctx, "kvstore", api.ConfigChange{Set: map[string]any{"port": 1}})
		if apiStatus(err) != http.StatusNotFound {
			t.Errorf("config of %s as %s: %v, want 404", uuid, sa.ClientID, err)
		}
		if _, err := cl.Model(uuid).Watch(ctx, 0); apiStatus(err) != http.StatusNotFound {
			t.Errorf("watch of %s as %s: %v, want 404", uuid, sa.ClientID, err)
		}
	}
	// The audit log: a service account without audit_viewer is refused
	// (403), and in no case is an entry of the demo org disclosed.
	out, errs, code := other.run("audit", "--format", "json")
	switch {
	case code == 0:
		var entries []map[string]any
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e["org"] != sa.Org {
				t.Errorf("%s sees an audit entry of org %v: %+v", sa.ClientID, e["org"], e)
			}
		}
	case !strings.Contains(errs, "audit_viewer"):
		t.Errorf("audit as %s: exit %d: %s%s", sa.ClientID, code, out, errs)
	}
}

// checkAudit reads the audit log as the demo user (hub administrator, so
// audit_viewer everywhere) and looks for every step of the test.
func checkAudit(t *testing.T, demo *droverCLI, s *devStack, eastUUID, westUUID string) {
	t.Helper()
	var entries []struct {
		Actor     string         `json:"actor"`
		Org       string         `json:"org"`
		Operation string         `json:"operation"`
		Method    string         `json:"method"`
		Path      string         `json:"path"`
		ModelUUID string         `json:"model-uuid"`
		Status    int            `json:"status"`
		Result    string         `json:"result"`
		Details   map[string]any `json:"details"`
	}
	if err := json.Unmarshal([]byte(demo.ok("audit", "--format", "json")), &entries); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range entries {
		seen = append(seen, fmt.Sprintf("%s %s %s %v %s %d %s", e.Actor, e.Org, e.Operation, e.Details["target"], e.ModelUUID, e.Status, e.Result))
	}
	want := []struct {
		what  string
		match func(op, target, model string) bool
	}{
		{"device login", func(op, _, _ string) bool { return op == "login-device" }},
		{"add-model east", func(op, _, m string) bool { return op == "add-model" && m == eastUUID }},
		{"add-model west", func(op, _, m string) bool { return op == "add-model" && m == westUUID }},
		{"deploy east", func(op, app, m string) bool { return op == "deploy" && app == "kvstore" && m == eastUUID }},
		{"deploy west", func(op, app, m string) bool { return op == "deploy" && app == "kvstore" && m == westUUID }},
		{"integrate", func(op, eps, m string) bool {
			return op == "integrate" && strings.Contains(eps, "webapp") && m == eastUUID
		}},
		{"config", func(op, app, m string) bool { return op == "config" && app == "webapp" && m == eastUUID }},
		{"refresh", func(op, app, m string) bool { return op == "refresh" && app == "kvstore" && m == westUUID }},
		{"exec", func(op, units, m string) bool { return op == "exec" && units == "kvstore/0" && m == westUUID }},
		{"other tenant's refused config", func(op, app, m string) bool {
			return op == "config" && app == "kvstore" && m == eastUUID
		}},
	}
	for _, w := range want {
		found := false
		for _, e := range entries {
			target, _ := e.Details["target"].(string)
			if w.match(e.Operation, target, e.ModelUUID) && (e.Actor == s.info.User.Email || w.what == "other tenant's refused config") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("audit log lacks %s; entries:\n%s", w.what, strings.Join(seen, "\n"))
		}
	}
	// Paging: --limit bounds the entries, and the command says how to read on.
	first, more, code := demo.run("audit", "--limit", "1", "--format", "json")
	cursor := regexp.MustCompile(`--after (\S+)`).FindStringSubmatch(more)
	var page1, page2 []struct{ ID int64 }
	if code != 0 || json.Unmarshal([]byte(first), &page1) != nil || len(page1) != 1 || cursor == nil {
		t.Fatalf("audit --limit 1: exit %d, %s / %s", code, first, more)
	}
	next, _, _ := demo.run("audit", "--limit", "1", "--after", cursor[1], "--format", "json")
	if err := json.Unmarshal([]byte(next), &page2); err != nil || len(page2) != 1 || page2[0].ID >= page1[0].ID {
		t.Errorf("the next page: %+v after %+v (%v)", page2, page1, err)
	}
	if err := json.Unmarshal([]byte(demo.ok("audit", "--limit", "0", "--format", "json")), &page2); err != nil || len(page2) < len(entries) {
		t.Errorf("audit --limit 0: %d entries, the first page had %d (%v)", len(page2), len(entries), err)
	}
	// A model is named as people name it: --model takes its name, and the
	// table shows names.
	out := demo.ok("audit", "--model", "e2e-west")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 || !strings.Contains(out, "add-model") {
		t.Errorf("audit --model e2e-west:\n%s", out)
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) < 4 || f[len(f)-3] != "e2e-west" {
			t.Errorf("audit --model e2e-west shows another model: %q", l)
		}
	}
	// --for-controller takes a controller's name: its entries only.
	var byController []struct {
		Operation string `json:"operation"`
		ModelUUID string `json:"model-uuid"`
	}
	if err := json.Unmarshal([]byte(demo.ok("audit", "--for-controller", "west", "--limit", "0", "--format", "json")), &byController); err != nil {
		t.Fatal(err)
	}
	addedWest := false
	for _, e := range byController {
		if e.ModelUUID == eastUUID {
			t.Errorf("audit --for-controller west shows an entry of east's model: %+v", e)
		}
		addedWest = addedWest || (e.Operation == "add-model" && e.ModelUUID == westUUID)
	}
	if !addedWest {
		t.Errorf("audit --for-controller west lacks the model added there: %+v", byController)
	}
	// Operations are named as the commands that made them, with their
	// target; --operation takes that name; --format csv is real CSV. The
	// entries span two organizations here (the hub administrator sees
	// globex's too): each says whose model it is.
	if !regexp.MustCompile(`\sdeploy\s+kvstore\s+demo\s+e2e-west\s+201\s+ok`).MatchString(out) {
		t.Errorf("audit table lacks the deploy of kvstore:\n%s", out)
	}
	var deploys []struct{ Operation string }
	if err := json.Unmarshal([]byte(demo.ok("audit", "--operation", "deploy", "--format", "json")), &deploys); err != nil || len(deploys) < 2 {
		t.Errorf("audit --operation deploy: %+v (%v)", deploys, err)
	}
	for _, d := range deploys {
		if d.Operation != "deploy" {
			t.Errorf("audit --operation deploy gave %q", d.Operation)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(demo.ok("audit", "--model", "e2e-west", "--format", "csv"))).ReadAll()
	if err != nil || len(recs) < 3 || strings.Join(recs[0], ",") != "TIME,ACTOR,OPERATION,TARGET,ORG,MODEL,STATUS,RESULT" {
		t.Errorf("audit --format csv: %v (%v)", recs, err)
	}
}
