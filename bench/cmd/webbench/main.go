// Command webbench measures the dashboard (item 3 of issue 29) in headless
// Chromium against a real hub: a private PostgreSQL and, in this process,
// OpenFGA, the development issuer, the hub and the controller east
// registered with it. The hub's index holds -models synthetic models on
// three synthetic controllers; east holds one real model of -units units
// (one application, each unit on a manual machine of its own) whose
// machines' agents are simulated over the real agent websocket.
//
// Printed, each over -reps fresh page loads (minimum, median, maximum):
//   - the models view's first meaningful render (the page's
//     drover:models-rendered mark, from the navigation's start), target ≤ 1 s;
//   - the model view's render of the -units model (drover:model-rendered),
//     target ≤ 1 s;
//   - while the agents set -rate workload statuses a second for -load, the
//     share of the time the page's main thread was idle (1 − Chromium's
//     TaskDuration over the wall time), target ≥ 50%, and that the page
//     applied the last of them;
//   - the JavaScript the dashboard ships (web/dist, gzip), target ≤ 200 KB.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

type options struct {
	models, units, reps, rate, conc int
	load                            int // seconds
	dist                            string
	keep                            bool
}

func main() {
	var o options
	flag.IntVar(&o.models, "models", 1000, "synthetic models in the hub's index")
	flag.IntVar(&o.units, "units", 1000, "units of the real model on east")
	flag.IntVar(&o.reps, "reps", 5, "page loads measured per view")
	flag.IntVar(&o.rate, "rate", 100, "workload statuses set per second during the load")
	flag.IntVar(&o.load, "load-seconds", 10, "how long the status load runs")
	flag.IntVar(&o.conc, "concurrency", 64, "agent dials and setup proposals at once")
	flag.StringVar(&o.dist, "dist", "../web/dist", "the built dashboard, for its size")
	flag.BoolVar(&o.keep, "keep", false, "keep the state directory")
	flag.Parse()
	if o.models < 1 || o.units < 1 || o.reps < 1 || o.rate < 1 || o.load < 1 || o.conc < 1 {
		fmt.Fprintln(os.Stderr, "webbench: every count must be at least 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		if errors.Is(err, errTargetMissed) {
			fmt.Fprintln(os.Stderr, "webbench:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "webbench:", err)
		os.Exit(2)
	}
}

// errTargetMissed is returned when every figure was measured and one
// missed its target.
var errTargetMissed = errors.New("a target was missed")
