package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/spoke/provider/local"
)

// teardownFlags are the flags of `droverd teardown`.
type teardownFlags struct {
	dataDir, machineDir string
	grace               time.Duration
	remove              bool
}

// newTeardownCmd is `droverd teardown`.
func newTeardownCmd(stdout io.Writer) *cobra.Command {
	f := &teardownFlags{}
	cmd := &cobra.Command{
		Use:   "teardown --data-dir DIR [--machine-dir DIR] [--grace 10s] [--remove]",
		Short: "Stop every local machine agent and workload of a controller's data dir",
		Long: `Stops every machine agent and workload process of a local controller's
machines. 'drover kill-controller' and 'destroy-controller' run it after
stopping the controller's nodes.`,
		Example: "  droverd teardown --data-dir /var/lib/drover/c1 --remove",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTeardown(f, stdout)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.dataDir, "data-dir", "", "controller node data directory (required)")
	fs.StringVar(&f.machineDir, "machine-dir", "", "local machines directory (default as droverd's: DATA_DIR/machines, or as root /var/lib/drover-machines/...)")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL")
	fs.BoolVar(&f.remove, "remove", false, "also delete the machines' directories and their users")
	return cmd
}

// runTeardown powers off every local machine of a controller node's data
// dir: machine agents and the workloads their charms started. `drover
// kill-controller` and `destroy-controller` run it after stopping the
// controller's nodes, when no hook can run any more; with --remove (the
// controller's data is being deleted) it also deletes the machines'
// directories and users.
func runTeardown(f *teardownFlags, stdout io.Writer) error {
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
