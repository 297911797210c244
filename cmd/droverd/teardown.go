package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/droverhq/drover/spoke/provider/local"
)

// runTeardown powers off every local machine of a controller node's data
// dir: machine agents and the workloads their charms started. `drover
// kill-controller` and `destroy-controller` run it after stopping the
// controller's nodes, when no hook can run any more; with --remove (the
// controller's data is being deleted) it also deletes the machines'
// directories and users.
func runTeardown(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("droverd teardown", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "", "controller node data directory (required)")
	machineDir := fs.String("machine-dir", "", "local machines directory (default as droverd's: DATA_DIR/machines, or as root /var/lib/drover-machines/...)")
	grace := fs.Duration("grace", 10*time.Second, "time between SIGTERM and SIGKILL")
	remove := fs.Bool("remove", false, "also delete the machines' directories and their users")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: droverd teardown --data-dir DIR [--machine-dir DIR] [--grace 10s] [--remove]\n\n"+
			"Stops every machine agent and workload process of a local controller's machines.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	if *dataDir == "" && *machineDir == "" {
		return usageError{fmt.Errorf("--data-dir is required")}
	}
	dir := *machineDir
	if dir == "" {
		dir = local.DefaultDir(*dataDir)
	}
	if *remove {
		if err := local.DestroyMachines(dir, *grace); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed the machines under %s\n", dir)
		return nil
	}
	left := local.KillProcessesUnder(dir, *grace)
	if left > 0 {
		return fmt.Errorf("%d processes under %s could not be stopped", left, dir)
	}
	fmt.Fprintf(stdout, "stopped every process under %s\n", dir)
	return nil
}
