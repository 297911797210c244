package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard's browser tests drive Debian's Chromium, headless, with
// chromedp against the real `droverd dev` (startDevStack): the login goes
// through the hub's real redirect to Dex and back.

// chromiumPath is Debian's Chromium (scripts/deps.sh installs it).
const chromiumPath = "/usr/bin/chromium"

// browserTimeout bounds each browser test's whole conversation with
// Chromium.
const browserTimeout = 10 * time.Minute

// browser is one headless Chromium with a profile of its own; ctx is its
// tab (chromedp.Run(b.ctx, ...)).
type browser struct {
	t   *testing.T
	ctx context.Context
}

// newBrowser starts Chromium for t: a fresh profile in a temporary
// directory, the dev CA's certificates accepted (the page is the test's
// own), and on failure a screenshot of the page, in
// $DROVER_BROWSER_ARTIFACTS or a temporary directory, its path logged. It
// skips t only where Chromium is missing and cannot be installed (not
// root); as root a missing Chromium is a failure: `make deps` installs it.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("%s is missing and we are not root to install it (apt-get install chromium)", chromiumPath)
		}
		t.Fatalf("%s is missing: run make deps (scripts/deps.sh installs chromium)", chromiumPath)
	}
	// Chromium's own temporary files go to the test's directory, which
	// the test removes: a killed browser leaves nothing in /tmp.
	tmp := t.TempDir()
	// Not t.Context(): that ends before the cleanups, and the screenshot
	// of a failed test is taken in one.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromiumPath), chromedp.Env("TMPDIR="+tmp),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.IgnoreCertErrors, chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(tmp, "profile")))
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(tab, browserTimeout)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	// Registered after the cancels, so it runs before them.
	t.Cleanup(func() {
		if t.Failed() {
			screenshot(t, tab)
		}
	})
	// Start the browser now: a failure to launch is the test's first
	// error, not a later step's.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return &browser{t: t, ctx: ctx}
}

// screenshot saves the page as a PNG next to the test's other artifacts.
func screenshot(t *testing.T, tab context.Context) {
	dir := os.Getenv("DROVER_BROWSER_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_") + ".png"
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	url, _ := chromedp.Run(ctx, chromedp.Location())
	t.Logf("screenshot of %s: %s", url, path)
}

// with is b for t: a subtest's steps fail the subtest, and a failed
// subtest leaves its own screenshot.
func (b *browser) with(t *testing.T) *browser {
	c := *b
	c.t = t
	t.Cleanup(func() {
		if t.Failed() {
			screenshot(t, c.ctx)
		}
	})
	return &c
}

// run runs steps in the tab, failing the test on error.
func (b *browser) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// location is the tab's URL.
func (b *browser) location() string {
	b.t.Helper()
	u, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatalf("location: %v", err)
	}
	return u
}

// fetchJSON runs fetch(path) in the page (its origin, its cookies) and
// decodes the JSON answer into out; it returns the HTTP status.
func (b *browser) fetchJSON(path string, out any) int {
	b.t.Helper()
	js := fmt.Sprintf(`fetch(%q, {credentials: "same-origin"}).then(async r => JSON.stringify({status: r.status, body: await r.text()}))`, path)
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("fetch %s: %v", path, err)
	}
	var res struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		b.t.Fatalf("fetch %s: %v", path, err)
	}
	if out != nil && res.Status/100 == 2 {
		if err := json.Unmarshal([]byte(res.Body), out); err != nil {
			b.t.Fatalf("fetch %s: %v: %.200s", path, err, res.Body)
		}
	}
	return res.Status
}

// loginOIDC logs b in to the stack's hub as a person of its Dex issuer,
// the way a person does: the hub's /auth/login redirects to Dex's login
// form, which is filled in and submitted, and Dex redirects back to the
// hub's callback, which sets the session cookie and returns to the app.
func loginOIDC(t *testing.T, b *browser, stack *devStack, email, password string) {
	t.Helper()
	b.run("open the hub's login", chromedp.Navigate(stack.info.HubURL+"/auth/login"),
		chromedp.WaitVisible(chromedp.CSS("#login")))
	if u := b.location(); !strings.HasPrefix(u, stack.info.Issuer) {
		t.Fatalf("the hub's login went to %s, not to its issuer %s", u, stack.info.Issuer)
	}
	b.run("sign in at Dex", chromedp.SendKeys(chromedp.CSS("#login"), email),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("#submit-login")))
	// Back at the hub: the callback sets the cookie and redirects to "/".
	deadline := time.Now().Add(30 * time.Second)
	for !strings.HasPrefix(b.location(), stack.info.HubURL+"/") || strings.Contains(b.location(), "/auth/") {
		if time.Now().After(deadline) {
			t.Fatalf("after signing in as %s the browser is at %s, not the hub's app", email, b.location())
		}
		b.run("wait for the redirect", chromedp.WaitReady(chromedp.CSS("body")))
	}
	b.run("the app loads", chromedp.WaitReady(chromedp.CSS("body")))
}

// axeScript is axe-core as the dashboard's npm packages install it.
var axeScript = filepath.Join("..", "web", "node_modules", "axe-core", "axe.min.js")

// axe runs axe-core on the page and fails t on every violation of impact
// serious or critical. Before the app's npm packages exist (no
// web/package.json) there is nothing to check it with and it says so.
func axe(t *testing.T, b *browser) {
	t.Helper()
	src, err := os.ReadFile(axeScript)
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join("..", "web", "package.json")); errors.Is(err, os.ErrNotExist) {
			t.Logf("axe: no web/package.json, so no axe-core: accessibility not checked")
			return
		}
		t.Fatalf("axe: %s is missing: run make web-deps", axeScript)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](string(src)+";true")); err != nil {
		t.Fatalf("axe: injecting axe-core: %v", err)
	}
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r =>
		JSON.stringify(r.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v =>
			({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 5)}))))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe: %v", err)
	}
	var violations []struct {
		ID, Impact, Help string
		Nodes            []string
	}
	if err := json.Unmarshal([]byte(raw), &violations); err != nil {
		t.Fatalf("axe: %v: %.200s", err, raw)
	}
	for _, v := range violations {
		t.Errorf("axe: %s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(v.Nodes, ", "))
	}
}

// TestDashboardLogin: the demo user logs in through the hub's real OIDC
// redirect (hub, Dex, callback) and lands on the dashboard, whose page
// passes axe's serious and critical rules; the page's own requests to the
// API carry the session. droverd dev's other people log in the same way,
// each a member of their own organization alone: the reader of the demo
// organization, and the member of the other one.
func TestDashboardLogin(t *testing.T) {
	b := newBrowser(t)
	stack := startDevStack(t)
	if stack.info.DashboardURL != stack.info.HubURL+"/" {
		t.Errorf("dev.json's dashboard-url %q, want the hub's URL", stack.info.DashboardURL)
	}
	loginOIDC(t, b, stack, stack.info.User.Email, stack.info.User.Password)
	title, err := chromedp.Run(b.ctx, chromedp.Title())
	if err != nil || title != "Drover" {
		t.Fatalf("the dashboard's title: %q %v, want Drover", title, err)
	}
	var who struct{ User string }
	if code := b.fetchJSON("/v1/whoami", &who); code != 200 || who.User == "" {
		t.Fatalf("whoami from the page: %d %+v", code, who)
	}
	axe(t, b)

	for _, p := range []devUser{stack.info.Reader, stack.info.OtherOrgUser} {
		if p.Email == "" || p.Org == "" {
			t.Fatalf("dev.json lacks a person: %+v", stack.info)
		}
		b := newBrowser(t)
		loginOIDC(t, b, stack, p.Email, p.Password)
		var orgs struct{ Organizations []struct{ Name string } }
		if code := b.fetchJSON("/v1/organizations", &orgs); code != 200 || len(orgs.Organizations) != 1 || orgs.Organizations[0].Name != p.Org {
			t.Errorf("%s's organizations: %d %+v, want %s alone", p.Email, code, orgs, p.Org)
		}
	}
	if stack.info.Reader.Org != stack.info.User.Org || stack.info.OtherOrgUser.Org == stack.info.User.Org {
		t.Errorf("dev.json's people: reader in %q, other in %q, demo in %q", stack.info.Reader.Org, stack.info.OtherOrgUser.Org, stack.info.User.Org)
	}
}
