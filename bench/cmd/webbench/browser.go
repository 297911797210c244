package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// chromium is where Debian puts its Chromium (scripts/deps.sh installs it).
const chromium = "/usr/bin/chromium"

// browser is one headless Chromium with a profile of its own.
type browser struct {
	ctx    context.Context // a chromedp context that has run once
	cancel func()
}

// newBrowser starts headless Chromium with the flags that keep it off any
// network but the loopback one (TOOLCHAIN.md §5). The hub's certificate is
// of the bench's own CA, which Chromium does not trust.
func newBrowser(ctx context.Context, profile string) (*browser, error) {
	if _, err := os.Stat(chromium); err != nil {
		return nil, fmt.Errorf("webbench needs Debian's Chromium at %s (scripts/deps.sh installs it as root): %w", chromium, err)
	}
	// Chromium's temporary files go beside the profile, which the bench
	// removes with its state: a run leaves nothing in /tmp.
	actx, acancel := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chromium), chromedp.Env("TMPDIR="+filepath.Dir(profile)),
		chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("ignore-certificate-errors", true),
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(profile))
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		bcancel()
		acancel()
		return nil, fmt.Errorf("start Chromium: %w", err)
	}
	return &browser{ctx: bctx, cancel: func() { bcancel(); acancel() }}, nil
}

func (b *browser) close() { b.cancel() }

// login gives the browser the hub's session cookie for token, as the
// hub's login callback sets it.
func (b *browser) login(hubURL, token string) error {
	yes := true
	return chromedp.Do(b.ctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, network.SetCookie, network.SetCookieParams{Name: "__Host-drover_session", Value: token,
			URL: hubURL + "/", Path: "/", Secure: &yes, HTTPOnly: &yes, SameSite: network.CookieSameSiteLax})
		return chromedp.Void{}, err
	})
}

// markAfterLoad loads url afresh and returns when the page set the
// performance mark: its time from the navigation's start.
func (b *browser) markAfterLoad(ctx context.Context, url, mark string) (time.Duration, error) {
	if err := chromedp.Do(b.ctx, chromedp.Navigate("about:blank")); err != nil {
		return 0, err
	}
	if err := chromedp.Do(b.ctx, chromedp.Navigate(url)); err != nil {
		return 0, err
	}
	wctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	for {
		ms, err := chromedp.Run(wctx, chromedp.Poll[float64](fmt.Sprintf(
			`(() => { const m = performance.getEntriesByName(%q); return m.length ? m[0].startTime : null })()`, mark)))
		if err == nil {
			return time.Duration(ms * float64(time.Millisecond)), ctx.Err()
		}
		// The page's execution context went away under the poll (the
		// navigation was still settling): ask the new one.
		if wctx.Err() != nil || !strings.Contains(err.Error(), "Cannot find context") {
			return 0, fmt.Errorf("%s never set the mark %s: %w", url, mark, err)
		}
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) (T, error) {
	return chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
}

// taskTime is Chromium's TaskDuration metric: the time the page's main
// thread spent running tasks since it started.
func (b *browser) taskTime() (time.Duration, error) {
	return chromedp.Run(b.ctx, func(ctx context.Context, t *chromedp.Target) (time.Duration, error) {
		if _, err := cdp.Call(ctx, t, performance.Enable, performance.EnableParams{}); err != nil {
			return 0, err
		}
		res, err := cdp.Call(ctx, t, performance.GetMetrics, cdp.Empty{})
		if err != nil {
			return 0, err
		}
		for _, m := range res.Metrics {
			if m.Name == "TaskDuration" {
				return time.Duration(m.Value * float64(time.Second)), nil
			}
		}
		return 0, errors.New("Chromium reported no TaskDuration metric")
	})
}
