package devidp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
)

// SignIn completes an authorization code login at the development issuer
// as a browser would: open authURL (the relying party's redirect to the
// issuer), post the email and password to the login form, and follow the
// issuer's redirects until one leaves it. That redirect, to the relying
// party's redirect URI with its code and state, is returned, not followed.
// It is for tests and scripts against the development issuer.
func SignIn(ctx context.Context, authURL, email, password string) (*url.URL, error) {
	start, err := url.Parse(authURL)
	if err != nil {
		return nil, err
	}
	var out *url.URL
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host != start.Host {
			out = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	if out != nil {
		return out, nil // a session the issuer remembered
	}
	m := formAction.FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, `name="password"`) {
		return nil, fmt.Errorf("devidp: no login form at %s (HTTP %d)", resp.Request.URL, resp.StatusCode)
	}
	resp, body, err = post(ctx, c, resp.Request.URL, m[1], url.Values{"login": {email}, "password": {password}})
	if err != nil {
		return nil, err
	}
	if out == nil {
		if strings.Contains(body, "Invalid") {
			return nil, errors.New("devidp: invalid email or password")
		}
		return nil, fmt.Errorf("devidp: the login ended at %s (HTTP %d), not at a redirect out of the issuer", resp.Request.URL.Path, resp.StatusCode)
	}
	return out, nil
}
