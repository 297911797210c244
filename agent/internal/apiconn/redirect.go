package apiconn

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/droverhq/drover/api"
)

// maxRefusal bounds the error body of a refused login.
const maxRefusal = 64 << 10

// refused handles a login the controller answered 409: the websocket
// dialler keeps only the first kilobyte of the answer, so the same login
// is asked again as a plain request (the controller refuses it before any
// upgrade) to read the whole error. A redirect goes to OnRedirect; the
// error is returned either way, and the next session dials wherever the
// connection points then.
func (c *Conn) refused(ctx context.Context, addr string, tlsCfg *tls.Config, h http.Header, first *http.Response) error {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "https://"+addr+"/v1/agent/stream", nil)
	if err != nil {
		return err
	}
	req.Header = h.Clone()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("dial %s: HTTP %d, and its error cannot be read: %w", addr, first.StatusCode, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
	if err != nil {
		return fmt.Errorf("dial %s: HTTP %d, and its error cannot be read: %w", addr, resp.StatusCode, err)
	}
	var e api.Error
	if json.Unmarshal(body, &e) != nil || e.Code == "" {
		return fmt.Errorf("dial %s: HTTP %d %s", addr, resp.StatusCode, body)
	}
	if t, ok := api.RedirectTarget(&e); ok && c.cfg.OnRedirect != nil {
		c.cfg.Logger.Info("the model moved to another controller", "controller", t.ControllerName, "addresses", t.Addresses)
		c.cfg.OnRedirect(*t)
	}
	return fmt.Errorf("dial %s: %w", addr, &e)
}
