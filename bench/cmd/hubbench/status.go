package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/hub/hubload"
)

// benchStatus creates two models on the real spoke through the hub (as the
// user who sees everything) and compares status through the hub (the hub's
// copy revalidated, and relayed with no-store) with status from the spoke
// directly on each: a typical model (o.apps applications of
// o.units units, on machines no agent runs for: the spoke has no
// provisioner), on which the target is judged, and the same applications
// without units, whose status is so cheap that the comparison shows the
// hub's fixed cost per request.
func benchStatus(ctx context.Context, o options, st *stack, l *hubload.Loader, user string) error {
	tok, err := l.Token(ctx, user, time.Hour)
	if err != nil {
		return err
	}
	viaHub, err := client([]string{st.Addr}, st.CA, tok)
	if err != nil {
		return err
	}
	defer viaHub.Close()
	// relayed asks the hub not to use its copy of the status (no-store):
	// the controller builds every answer and the hub relays it, so the
	// figure is the hub's hop alone, without its status cache.
	relayed, err := client([]string{st.Addr}, st.CA, tok, "Cache-Control", "no-store")
	if err != nil {
		return err
	}
	defer relayed.Close()
	for _, units := range []int{o.units, 0} {
		if err := benchStatusModel(ctx, o, st, l, user, viaHub, relayed, units, units == o.units); err != nil {
			return err
		}
	}
	return nil
}

func benchStatusModel(ctx context.Context, o options, st *stack, l *hubload.Loader, user string, viaHub, relayed *api.Client, units int, judged bool) error {
	var m struct {
		UUID string `json:"uuid"`
	}
	name := fmt.Sprintf("status-%d-units", units)
	if err := viaHub.Call(ctx, http.MethodPost, "/v1/models", nil, map[string]string{"name": name, "region": "real"}, &m); err != nil {
		return fmt.Errorf("add model through the hub: %w", err)
	}
	if err := addApps(ctx, viaHub, m.UUID, o.apps, units); err != nil {
		return err
	}
	// The direct path carries what the hub's proxy forwards: a hub-signed
	// read token for this model, audience = the spoke.
	stok, err := l.SpokeToken(user, st.spokeUUID, "read", m.UUID, time.Hour)
	if err != nil {
		return err
	}
	direct, err := client([]string{st.spokeAddr}, st.spokeCA, stok)
	if err != nil {
		return err
	}
	defer direct.Close()

	paths := []*api.Client{viaHub, direct, relayed}
	lat := [3][]time.Duration{}
	costs := [3]*cost{newCost(st.spokePID), newCost(st.spokePID), newCost(st.spokePID)}
	per := max(1, o.statusReqs/o.rounds)
	for _, c := range paths { // warm-up: connections, JWKS, caches
		for range 20 {
			if _, err := c.Model(m.UUID).Status(ctx); err != nil {
				return err
			}
		}
	}
	var apps, nunits, size int
	for r := range o.rounds {
		for k := range len(paths) {
			i := (r + k) % len(paths) // take turns to go first
			for range per {
				costs[i].begin()
				t := time.Now()
				fs, err := paths[i].Model(m.UUID).Status(ctx)
				d := time.Since(t)
				costs[i].end()
				if err != nil {
					return err
				}
				lat[i] = append(lat[i], d)
				apps, nunits = len(fs.Applications), 0
				for _, a := range fs.Applications {
					nunits += len(a.Units)
				}
				if size == 0 {
					b, _ := json.Marshal(fs)
					size = len(b)
				}
			}
		}
	}
	h50, h99, d50, d99 := pct(lat[0], 50), pct(lat[0], 99), pct(lat[1], 50), pct(lat[1], 99)
	r50, r99 := pct(lat[2], 50), pct(lat[2], 99)
	over := func(h, d time.Duration) float64 { return 100 * (float64(h) - float64(d)) / float64(d) }
	fmt.Printf("status (model with %d applications, %d units; %.1f KB of JSON), n=%d per path, interleaved in %d rounds:\n",
		apps, nunits, float64(size)/1024, len(lat[0]), o.rounds)
	fmt.Printf("  direct to the spoke        p50 %7s  p99 %7s\n", ms(d50), ms(d99))
	fmt.Printf("  through the hub            p50 %7s  p99 %7s  (its copy, revalidated: the controller answers 304)\n", ms(h50), ms(h99))
	fmt.Printf("  through the hub, relayed   p50 %7s  p99 %7s  (no-store: the controller builds it, the hub relays it)\n", ms(r50), ms(r99))
	printCosts("through the hub", costs[0], costs[1])
	printCosts("relayed", costs[2], costs[1])
	verdictText := "(the hub's fixed cost per request)"
	if judged {
		verdictText = "target ≤ 10%: " + verdict(over(h50, d50) <= 10 && over(h99, d99) <= 10)
	}
	fmt.Printf("  overhead                   p50 %+6.1f%% (%s)  p99 %+6.1f%% (%s)  %s\n",
		over(h50, d50), us(h50-d50), over(h99, d99), us(h99-d99), verdictText)
	fmt.Printf("  overhead, relayed          p50 %+6.1f%% (%s)  p99 %+6.1f%% (%s)  (the hop alone)\n",
		over(r50, d50), us(r50-d50), over(r99, d99), us(r99-d99))
	return nil
}

// addApps uploads the kvstore sample charm through the hub and deploys it
// n times with units units each.
func addApps(ctx context.Context, c *api.Client, model string, n, units int) error {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "charms", "kvstore")
	var buf bytes.Buffer
	if err := charm.ArchiveDir(dir, &buf); err != nil {
		return err
	}
	ch, err := c.Model(model).UploadCharm(ctx, &buf)
	if err != nil {
		return fmt.Errorf("upload charm through the hub: %w", err)
	}
	for i := range n {
		req := api.DeployRequest{Application: fmt.Sprintf("kv%d", i), CharmSHA256: ch.SHA256, NumUnits: units}
		if _, err := c.Model(model).Deploy(ctx, req); err != nil {
			return fmt.Errorf("deploy through the hub: %w", err)
		}
	}
	return nil
}
