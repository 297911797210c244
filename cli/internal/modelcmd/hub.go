package modelcmd

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

// LoggedOut reports whether ctl (empty: the current controller) is a hub
// this client has logged out of.
func (a *Env) LoggedOut(ctl string) bool {
	s, err := a.Store.Load()
	if err != nil {
		return false
	}
	name, err := a.ControllerName(s, ctl)
	d, acct := s.Controllers[name], s.Accounts[name]
	return err == nil && d != nil && d.Hub && acct != nil && acct.Token == ""
}

// HubCall runs one call against a hub's own API and prints the answer.
func (a *Env) HubCall(ctx context.Context, ctl, method, path string, q url.Values, in any, show func(any) error) error {
	var out any
	if err := a.HubDo(ctx, ctl, method, path, q, in, &out); err != nil {
		return err
	}
	if show != nil {
		return show(out)
	}
	return nil
}

// HubDo runs one call against a hub's own API and decodes the answer
// into out.
func (a *Env) HubDo(ctx context.Context, ctl, method, path string, q url.Values, in, out any) error {
	c, err := a.Dial(ctl)
	if err != nil {
		return err
	}
	defer c.Client.Close()
	if !c.Details.Hub {
		return fmt.Errorf("controller %q is not a hub: log in to one with 'drover login HUB'", c.Name)
	}
	return c.Client.Call(ctx, method, path, q, in, out)
}

// TableTimeLayout is how tables show times: to the second, in UTC.
const TableTimeLayout = "2006-01-02 15:04:05Z"

// TableTime shows an RFC 3339 time in a table, to the second, in UTC.
func TableTime(s string) string {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC().Format(TableTimeLayout)
	}
	return s
}

// HubControllerList returns the controllers registered with a hub, as
// it lists them (their CA certificates left out).
func (a *Env) HubControllerList(ctx context.Context, ctl string) ([]map[string]any, error) {
	var doc struct {
		Controllers []map[string]any `json:"controllers"`
	}
	if err := a.HubDo(ctx, ctl, http.MethodGet, "/v1/controllers", nil, nil, &doc); err != nil {
		return nil, err
	}
	for _, c := range doc.Controllers {
		delete(c, "ca-cert")
	}
	return doc.Controllers, nil
}

// WriteHubControllers prints the controllers registered with a hub.
func (a *Env) WriteHubControllers(ctx context.Context, ctl string) error {
	list, err := a.HubControllerList(ctx, ctl)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Controller\tRegion\tCloud\tHealth\tLast contact\tEvent index")
	for _, m := range list {
		seen := "-"
		if v, ok := m["last-seen"].(string); ok {
			seen = TableTime(v)
		}
		str := func(k string) string { v, _ := m[k].(string); return OrDash(v) }
		health := str("status")
		if dep, _ := m["deprecated"].(bool); dep {
			health += ", deprecated" // takes no new models
		}
		h, _ := m["health"].(map[string]any)
		if n, _ := h["models-not-indexed"].(float64); n > 0 {
			// More models than the hub indexes for one controller.
			health += fmt.Sprintf(", %s models not indexed (limit %s)", JSONInt(n), JSONInt(h["model-limit"]))
		}
		fmt.Fprintf(tw, "%v\t%v\t%v\t%v\t%v\t%v\n", str("name"), str("region"), str("cloud"), health, seen, JSONInt(m["event-index"]))
	}
	return tw.Flush()
}

// JSONInt shows a decoded JSON number as an integer (fmt shows a float64
// of a million as 1e+06), "-" when absent.
func JSONInt(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// ControllersBehind is the hub's GET /v1/controllers: the controllers
// behind it the caller may see, as the hub describes them.
func ControllersBehind(ctx context.Context, c *Conn) ([]map[string]any, error) {
	var list struct {
		Controllers []map[string]any `json:"controllers"`
	}
	err := c.Client.Call(ctx, http.MethodGet, "/v1/controllers", nil, nil, &list)
	return list.Controllers, err
}

// HubInfo is the hub's GET /v1/hub, within 3 s.
func HubInfo(ctx context.Context, c *Conn) (api.HubInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var info api.HubInfo
	return info, c.Client.Call(ctx, http.MethodGet, "/v1/hub", nil, nil, &info)
}

// NotePending tells that a grant or membership names, by email, someone
// who has not logged in yet (the hub's answer says so; else it has none).
func (a *Env) NotePending(out any) error {
	if doc, ok := out.(map[string]any); ok {
		if u, ok := doc["pending-user"].(string); ok && u != "" {
			fmt.Fprintf(a.Stderr, "%s has not logged in yet: this applies from their first login.\n", u)
		}
	}
	return nil
}
