package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/droverhq/drover/tests/testkit"
)

// What the dashboard's browser tests do with a page, by the app's
// data-testid attributes (web/README.md lists them).

// byID selects the elements of a data-testid.
func byID(id string) string { return fmt.Sprintf(`[data-testid=%q]`, id) }

// waitJS polls a JavaScript expression in the page until it is truthy or
// d has passed, and fails the test then with what.
func (b *browser) waitJS(d time.Duration, what, expr string) {
	b.t.Helper()
	if !b.within(d, expr) {
		b.t.Fatalf("%s: not within %v", what, d)
	}
}

// within polls a JavaScript expression in the page until it is truthy
// (true) or d has passed (false).
func (b *browser) within(d time.Duration, expr string) bool {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(d)))
	return err == nil
}

// jsValue evaluates an expression in the page (awaiting it, should it
// be a promise).
func jsValue[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// keys are the data-key attributes of the elements of a data-testid.
func (b *browser) keys(id string) []string {
	b.t.Helper()
	return jsValue[[]string](b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.dataset.key)`, byID(id)))
}

// count is the number of elements of a data-testid.
func (b *browser) count(id string) int {
	b.t.Helper()
	return jsValue[int](b, fmt.Sprintf(`document.querySelectorAll(%q).length`, byID(id)))
}

// text is the text of the first element of a data-testid.
func (b *browser) text(id string) string {
	b.t.Helper()
	return jsValue[string](b, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, byID(id)))
}

// open navigates to a path of the hub and waits for the page's body.
func (b *browser) open(hubURL, path string) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(hubURL+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// click clicks the first element of a data-testid.
func (b *browser) click(id string) {
	b.t.Helper()
	b.run("click "+id, chromedp.Click(chromedp.CSS(byID(id))))
}

// set gives an input or select of a data-testid a value as a person
// would (the app listens to input and change events).
func (b *browser) set(id, value string) {
	b.t.Helper()
	b.setCSS(byID(id), value)
}

// setCSS is set for the element a CSS selector names.
func (b *browser) setCSS(sel, value string) {
	b.t.Helper()
	b.run("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	ok := jsValue[bool](b, fmt.Sprintf(`(() => {
		const el = document.querySelector(%q);
		if (!el) return false;
		const proto = el.tagName === "SELECT" ? HTMLSelectElement.prototype : el.tagName === "TEXTAREA" ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
		Object.getOwnPropertyDescriptor(proto, "value").set.call(el, %q);
		el.dispatchEvent(new Event(el.tagName === "SELECT" ? "change" : "input", {bubbles: true}));
		return true;
	})()`, sel, value))
	if !ok {
		b.t.Fatalf("no %s to set", sel)
	}
}

// recordConnStates starts keeping every text the connection indicator
// shows, in order, in window.__connStates.
func (b *browser) recordConnStates() {
	b.t.Helper()
	jsValue[bool](b, fmt.Sprintf(`(() => {
		window.__connStates = [];
		const note = () => {
			const t = document.querySelector(%q)?.textContent;
			if (t && window.__connStates.at(-1) !== t) window.__connStates.push(t);
		};
		note();
		new MutationObserver(note).observe(document.body, {subtree: true, childList: true, characterData: true});
		return true;
	})()`, byID("conn-state")))
}

// downloadsTo has the browser save downloads in dir under their own names.
func (b *browser) downloadsTo(dir string) {
	b.t.Helper()
	b.run("allow downloads", func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
		return chromedp.Void{}, err
	})
}

// downloaded waits for the one finished download in dir and returns its
// name and content.
func (b *browser) downloaded(dir string) (name string, data []byte) {
	b.t.Helper()
	testkit.EventuallyWithin(b.t, 30*time.Second, func() (bool, error) {
		es, err := os.ReadDir(dir)
		if err != nil || len(es) != 1 || strings.HasSuffix(es[0].Name(), ".crdownload") {
			return false, err
		}
		name = es[0].Name()
		data, err = os.ReadFile(filepath.Join(dir, name))
		return err == nil, err
	}, "a download finished in %s", dir)
	return name, data
}

// docShot saves the page as docs/dashboard/NAME.png when
// DROVER_DASHBOARD_SHOTS names the directory to save into (make
// dashboard-shots regenerates the documentation's screenshots).
func (b *browser) docShot(name string) {
	b.t.Helper()
	dir := os.Getenv("DROVER_DASHBOARD_SHOTS")
	if dir == "" {
		return
	}
	// From the top: a sticky header scrolled along would be drawn
	// across the middle of a full-page shot.
	jsValue[bool](b, `(window.scrollTo(0, 0), true)`)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// forceCall runs a change from the page (its cookies, its origin, the
// CSRF header the app sends) and returns the HTTP status.
func (b *browser) forceCall(method, path, body string) int {
	b.t.Helper()
	return jsValue[int](b, fmt.Sprintf(`fetch(%q, {method: %q, credentials: "same-origin",
		headers: {"Content-Type": "application/json", "X-Drover-CSRF": "1"}, body: %q}).then(r => r.status)`, path, method, body))
}

// fetchText runs a GET from the page and returns its body.
func (b *browser) fetchText(path string) string {
	b.t.Helper()
	return jsValue[string](b, fmt.Sprintf(`fetch(%q, {credentials: "same-origin"}).then(r => r.text())`, path))
}
