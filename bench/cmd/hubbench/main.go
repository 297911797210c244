// Command hubbench measures the hub (acceptance 3 of the hub issue):
//
//   - `GET /v1/models` answered from the index: 10 synthetic controllers ×
//     1,000 models registered through the hub's store (their OpenFGA tuples
//     delivered by the outbox worker), for a user who can see 1% of them
//     (reader grants on 100 models) and one who sees 100% (administrator of
//     the organization). p50/p99 over -list-reqs sequential requests each,
//     through the hub's HTTPS API. Target: p99 ≤ 50 ms.
//   - proxied `status`: the same model on one real spoke, read through the
//     hub (`/v1/models/{uuid}/status`) and directly from the spoke with the
//     token the hub would forward, same api.Client settings, -status-reqs
//     sequential requests each, interleaved in rounds. Target: overhead
//     (p50 and p99) ≤ 10%. A third path reads through the hub with
//     Cache-Control: no-store, so the hub relays the controller's answer
//     without its revalidated copy (the hub's status cache): the hop alone.
//
// Everything runs on 127.0.0.1: a private PostgreSQL (from the system
// binaries), and in this process embedded OpenFGA, the development issuer,
// the hub and the spoke (with -spoke-process, the spoke runs in a process
// of its own, as a controller does).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/bench/internal/hubstack"
	"github.com/droverhq/drover/bench/internal/prof"
	"github.com/droverhq/drover/hub/hubload"
	"github.com/droverhq/drover/internal/gcpolicy"
)

type options struct {
	controllers, models, listReqs, statusReqs, rounds, apps, units int
	keep, spokeProcess                                             bool
	cpuprofile                                                     string
}

func main() {
	if v, ok := os.LookupEnv(spokeChildEnv); ok { // started by startSpokeProcess
		if err := runSpokeChild(v); err != nil {
			fmt.Fprintln(os.Stderr, "hubbench spoke:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.IntVar(&o.controllers, "controllers", 10, "synthetic controllers")
	flag.IntVar(&o.models, "models", 1000, "models per synthetic controller")
	flag.IntVar(&o.listReqs, "list-reqs", 300, "GET /v1/models requests per user")
	flag.IntVar(&o.statusReqs, "status-reqs", 2000, "status requests per path (hub, direct)")
	flag.IntVar(&o.rounds, "rounds", 1000, "interleaved rounds the status requests are split into (each round runs both paths, taking turns to go first)")
	flag.IntVar(&o.apps, "apps", 10, "applications in the status models")
	flag.IntVar(&o.units, "units", 3, "units per application in the typical status model")
	flag.BoolVar(&o.keep, "keep", false, "keep the state directory")
	flag.BoolVar(&o.spokeProcess, "spoke-process", false, "run the spoke in a process of its own, as a controller runs (default: in this process, as every figure in bench/README.md)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the measured phases (listing and status) to this file")
	flag.Parse()
	// The hub (and the spoke, in its process or in this one) run with
	// droverd's GC policy (internal/gcpolicy). GOGC overrides.
	if err := gcpolicy.Apply(); err != nil {
		fmt.Fprintln(os.Stderr, "hubbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "hubbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (err error) {
	root, remove, err := hubstack.Root("hubbench", o.keep)
	if err != nil {
		return err
	}
	defer remove()
	total := o.controllers * o.models
	st, err := startStack(ctx, root, uint32(total+1000), o.spokeProcess)
	if err != nil {
		return err
	}
	defer st.close()
	l := hubload.New(st.Server)
	u, err := populate(ctx, l, st.Issuer, o)
	if err != nil {
		return err
	}
	stopProf, err := prof.StartCPU(o.cpuprofile)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProf()) }()
	if err := benchList(ctx, o, st, l, u); err != nil {
		return err
	}
	return benchStatus(ctx, o, st, l, u.all)
}

// benchUsers are the users the listing is measured for: all administers
// the organization, some reads 1% of the models, owner owns them.
type benchUsers struct{ owner, all, some string }

// populate registers the synthetic controllers and models through the
// hub's store, grants the users, and waits until the outbox has delivered
// every tuple.
func populate(ctx context.Context, l *hubload.Loader, issuer string, o options) (benchUsers, error) {
	t0 := time.Now()
	var u benchUsers
	var err error
	for _, x := range []struct {
		dst         *string
		name, email string
	}{{&u.owner, "owner", "owner@example.com"}, {&u.all, "all", "all@example.com"}, {&u.some, "some", "some@example.com"}} {
		if *x.dst, err = l.User(ctx, issuer, x.name, x.email, "bench"); err != nil {
			return u, err
		}
	}
	if err := l.Grant(ctx, u.all, authz.Administrator, authz.OrgObject("bench")); err != nil {
		return u, err
	}
	for c := range o.controllers {
		cu := uuid.NewString()
		if err := l.AddController(ctx, cu, fmt.Sprintf("syn-%02d", c), "bench", fmt.Sprintf("r%d", c)); err != nil {
			return u, err
		}
		for m := range o.models {
			mu := uuid.NewString()
			if err := l.AddModel(ctx, mu, fmt.Sprintf("m-%02d-%04d", c, m), "bench", u.owner, cu); err != nil {
				return u, err
			}
			if (c*o.models+m)%100 == 0 { // 1%
				if err := l.Grant(ctx, u.some, authz.Reader, authz.ModelObject(mu)); err != nil {
					return u, err
				}
			}
		}
	}
	inserted := time.Since(t0)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := l.Settle(sctx); err != nil {
		return u, err
	}
	fmt.Printf("hubbench: %d controllers × %d models = %d index rows inserted in %v, tuples delivered by the outbox after %v\n",
		o.controllers, o.models, o.controllers*o.models, inserted.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	return u, nil
}

// benchList measures GET /v1/models for the user who sees 1% of the
// models and for the one who sees them all.
func benchList(ctx context.Context, o options, st *stack, l *hubload.Loader, users benchUsers) error {
	total := o.controllers * o.models
	for _, u := range []struct {
		name, id string
		want     int
	}{{"1%", users.some, total / 100}, {"100%", users.all, total}} {
		tok, err := l.Token(ctx, u.id, time.Hour)
		if err != nil {
			return err
		}
		cl, err := client([]string{st.Addr}, st.CA, tok)
		if err != nil {
			return err
		}
		lat, dec, n, err := measureList(ctx, cl, o.listReqs)
		cl.Close()
		if err != nil {
			return err
		}
		if n < u.want {
			return fmt.Errorf("user %s sees %d models, want at least %d", u.name, n, u.want)
		}
		p50, p99 := pct(lat, 50), pct(lat, 99)
		fmt.Printf("GET /v1/models  user sees %-4s (%5d models)  n=%d  answered p50 %7s  p99 %7s  target p99 ≤ 50ms: %s\n",
			u.name, n, len(lat), ms(p50), ms(p99), verdict(p99 <= 50*time.Millisecond))
		fmt.Printf("                                              and decoded p50 %7s  p99 %7s\n", ms(pct(dec, 50)), ms(pct(dec, 99)))
	}
	return nil
}

// client is the api.Client every status path uses: one address, pinned
// CA, a Bearer token, the same timeout and transport defaults, and the
// header (name, value pairs) given.
func client(addrs []string, ca []byte, tok string, header ...string) (*api.Client, error) {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return api.NewClient(api.ClientConfig{Addresses: addrs, CACert: ca, Token: tok, Timeout: 30 * time.Second, Header: h})
}

// measureList times n GET /v1/models (after 10 unmeasured ones): first
// until the whole answer has arrived (read to its end, as a load tester
// does), then until it has also been decoded with encoding/json into a
// one-field struct, the cheapest thing a Go caller can do with it. It
// returns both series and how many models the answer held.
func measureList(ctx context.Context, cl *api.Client, n int) (received, decoded []time.Duration, models int, err error) {
	var out struct {
		Models []struct {
			UUID string `json:"uuid"`
		} `json:"models"`
	}
	for i := range 2*n + 10 {
		dst := any(&out)
		if i >= 10 && i < 10+n {
			dst = nil // io.Copy to io.Discard, in api.Client
		}
		t := time.Now()
		if err := cl.Call(ctx, http.MethodGet, "/v1/models", nil, nil, dst); err != nil {
			return nil, nil, 0, err
		}
		switch d := time.Since(t); {
		case i < 10:
		case i < 10+n:
			received = append(received, d)
		default:
			decoded = append(decoded, d)
		}
	}
	return received, decoded, len(out.Models), nil
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// us prints a difference in microseconds (the hub's cost is a tenth of a
// millisecond: two decimals of one hide it).
func us(d time.Duration) string { return fmt.Sprintf("%+.0fµs", float64(d)/float64(time.Microsecond)) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}
