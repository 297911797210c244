package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/droverhq/drover/spoke/provider/local"
)

// teardownFlags are the flags of `droverd teardown`.
type teardownFlags struct {
	dataDir, machineDir string
	grace               time.Duration
	remove              bool
}

// newTeardownFlags defines the flags of `droverd teardown`; its usage goes
// to stderr.
func newTeardownFlags(stderr io.Writer) (*flag.FlagSet, *teardownFlags) {
	fs := flag.NewFlagSet("droverd teardown", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &teardownFlags{}
	fs.StringVar(&f.dataDir, "data-dir", "", "controller node data directory (required)")
	fs.StringVar(&f.machineDir, "machine-dir", "", "local machines directory (default as droverd's: DATA_DIR/machines, or as root /var/lib/drover-machines/...)")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL")
	fs.BoolVar(&f.remove, "remove", false, "also delete the machines' directories and their users")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: droverd teardown --data-dir DIR [--machine-dir DIR] [--grace 10s] [--remove]\n\n"+
			"Stops every machine agent and workload process of a local controller's machines.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs, f
}

// runTeardown powers off every local machine of a controller node's data
// dir: machine agents and the workloads their charms started. `drover
// kill-controller` and `destroy-controller` run it after stopping the
// controller's nodes, when no hook can run any more; with --remove (the
// controller's data is being deleted) it also deletes the machines'
// directories and users.
func runTeardown(args []string, stdout, stderr io.Writer) error {
	fs, f := newTeardownFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.dataDir == "" && f.machineDir == "" {
		return usageError{fmt.Errorf("--data-dir is required")}
	}
	dir := f.machineDir
	if dir == "" {
		dir = local.DefaultDir(f.dataDir)
	}
	if f.remove {
		if err := local.DestroyMachines(dir, f.grace); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed the machines under %s\n", dir)
		return nil
	}
	left := local.KillProcessesUnder(dir, f.grace)
	if left > 0 {
		return fmt.Errorf("%d processes under %s could not be stopped", left, dir)
	}
	fmt.Fprintf(stdout, "stopped every process under %s\n", dir)
	return nil
}
