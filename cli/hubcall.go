package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/droverhq/drover/api"
)

// loggedOut reports whether ctl (empty: the current controller) is a hub
// this client has logged out of.
func (a *App) loggedOut(ctl string) bool {
	s, err := a.store.Load()
	if err != nil {
		return false
	}
	name, err := a.controllerName(s, ctl)
	d, acct := s.Controllers[name], s.Accounts[name]
	return err == nil && d != nil && d.Hub && acct != nil && acct.Token == ""
}

// hubCall runs one call against a hub's own API and prints the answer.
func (a *App) hubCall(ctx context.Context, ctl, method, path string, q url.Values, in any, show func(any) error) error {
	var out any
	if err := a.hubDo(ctx, ctl, method, path, q, in, &out); err != nil {
		return err
	}
	if show != nil {
		return show(out)
	}
	return nil
}

// hubDo runs one call against a hub's own API and decodes the answer
// into out.
func (a *App) hubDo(ctx context.Context, ctl, method, path string, q url.Values, in, out any) error {
	c, err := a.dial(ctl)
	if err != nil {
		return err
	}
	defer c.client.Close()
	if !c.details.Hub {
		return fmt.Errorf("controller %q is not a hub: log in to one with 'drover login HUB'", c.name)
	}
	return c.client.Call(ctx, method, path, q, in, out)
}

// tableTimeLayout is how tables show times: to the second, in UTC.
const tableTimeLayout = "2006-01-02 15:04:05Z"

// tableTime shows an RFC 3339 time in a table, to the second, in UTC.
func tableTime(s string) string {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC().Format(tableTimeLayout)
	}
	return s
}

// hubControllerList returns the controllers registered with a hub, as
// it lists them (their CA certificates left out).
func (a *App) hubControllerList(ctx context.Context, ctl string) ([]map[string]any, error) {
	var doc struct {
		Controllers []map[string]any `json:"controllers"`
	}
	if err := a.hubDo(ctx, ctl, http.MethodGet, "/v1/controllers", nil, nil, &doc); err != nil {
		return nil, err
	}
	for _, c := range doc.Controllers {
		delete(c, "ca-cert")
	}
	return doc.Controllers, nil
}

// hubControllers prints the controllers registered with a hub.
func (a *App) hubControllers(ctx context.Context, ctl string) error {
	list, err := a.hubControllerList(ctx, ctl)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Controller\tRegion\tCloud\tHealth\tLast contact\tEvent index")
	for _, m := range list {
		seen := "-"
		if v, ok := m["last-seen"].(string); ok {
			seen = tableTime(v)
		}
		str := func(k string) string { v, _ := m[k].(string); return orDash(v) }
		health := str("status")
		if dep, _ := m["deprecated"].(bool); dep {
			health += ", deprecated" // takes no new models
		}
		h, _ := m["health"].(map[string]any)
		if n, _ := h["models-not-indexed"].(float64); n > 0 {
			// More models than the hub indexes for one controller.
			health += fmt.Sprintf(", %s models not indexed (limit %s)", jsonInt(n), jsonInt(h["model-limit"]))
		}
		fmt.Fprintf(tw, "%v\t%v\t%v\t%v\t%v\t%v\n", str("name"), str("region"), str("cloud"), health, seen, jsonInt(m["event-index"]))
	}
	return tw.Flush()
}

// jsonInt shows a decoded JSON number as an integer (fmt shows a float64
// of a million as 1e+06), "-" when absent.
func jsonInt(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// hubControllerList is the hub's GET /v1/controllers: the controllers
// behind it the caller may see, as the hub describes them.
func hubControllerList(ctx context.Context, c *conn) ([]map[string]any, error) {
	var list struct {
		Controllers []map[string]any `json:"controllers"`
	}
	err := c.client.Call(ctx, http.MethodGet, "/v1/controllers", nil, nil, &list)
	return list.Controllers, err
}

// hubInfo is the hub's GET /v1/hub, within 3 s.
func hubInfo(ctx context.Context, c *conn) (api.HubInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var info api.HubInfo
	return info, c.client.Call(ctx, http.MethodGet, "/v1/hub", nil, nil, &info)
}

// notePending tells that a grant or membership names, by email, someone
// who has not logged in yet (the hub's answer says so; else it has none).
func (a *App) notePending(out any) error {
	if doc, ok := out.(map[string]any); ok {
		if u, ok := doc["pending-user"].(string); ok && u != "" {
			fmt.Fprintf(a.Stderr, "%s has not logged in yet: this applies from their first login.\n", u)
		}
	}
	return nil
}
