package devidp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

var formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)

// ApproveDevice completes the user side of a device login as a browser
// would: open verificationURIComplete, follow to the password form, post
// the email and password. It is for tests and scripts against the
// development issuer.
func ApproveDevice(ctx context.Context, verificationURIComplete, email, password string) error {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(u string) (*http.Response, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, "", err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, "", err
		}
		b, err := readBody(resp)
		return resp, b, err
	}
	resp, body, err := get(verificationURIComplete)
	if err != nil {
		return err
	}
	// The device page posts the user code; Dex pre-fills it from the URL.
	// Submit it to reach the login form.
	m := formAction.FindStringSubmatch(body)
	if m == nil {
		return fmt.Errorf("devidp: no form at %s (HTTP %d)", resp.Request.URL, resp.StatusCode)
	}
	if !strings.Contains(body, `name="password"`) {
		u, _ := url.Parse(verificationURIComplete)
		form := url.Values{"user_code": {u.Query().Get("user_code")}}
		if resp, body, err = post(ctx, c, resp.Request.URL, m[1], form); err != nil {
			return err
		}
		if m = formAction.FindStringSubmatch(body); m == nil {
			return fmt.Errorf("devidp: no login form after the user code (HTTP %d)", resp.StatusCode)
		}
	}
	resp, body, err = post(ctx, c, resp.Request.URL, m[1], url.Values{"login": {email}, "password": {password}})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(resp.Request.URL.Path, "/device/callback") {
		if strings.Contains(body, "Invalid") {
			return errors.New("devidp: invalid email or password")
		}
		return fmt.Errorf("devidp: device approval ended at %s (HTTP %d)", resp.Request.URL.Path, resp.StatusCode)
	}
	return nil
}

func post(ctx context.Context, c *http.Client, base *url.URL, action string, form url.Values) (*http.Response, string, error) {
	ref, err := url.Parse(strings.ReplaceAll(action, "&amp;", "&"))
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base.ResolveReference(ref).String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	b, err := readBody(resp)
	return resp, b, err
}

func readBody(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
