package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// DestroyControllerCmd is 'drover destroy-controller', or with kill
// 'drover kill-controller'.
func (a *Commands) DestroyControllerCmd(kill bool) *cobra.Command {
	var destroyAll, keepData, yes bool
	var timeout time.Duration
	use, short := "destroy-controller NAME", "Destroy a local controller: stop its nodes and forget it"
	long := `Stops every process of a controller bootstrapped on this machine (the
bootstrap node and the nodes enable-ha started), removes their data
directories and removes the controller from the client store. It refuses
while any model has applications, unless --destroy-all-models is given.`
	if kill {
		use, short = "kill-controller NAME", "Forcibly stop a local controller and forget it"
		long = `Kills every process of a controller bootstrapped on this machine at once
(SIGKILL), whatever its models contain, removes their data directories and
removes the controller from the client store. Prefer destroy-controller.

NAME may also be a controller the client store does not know but whose
directory is in the client store's controllers directory (a bootstrap that
was interrupted, a store entry removed by hand): kill-controller stops and
removes it all the same.`
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: "  drover " + map[bool]string{false: "destroy-controller local --destroy-all-models", true: "kill-controller local -y"}[kill],
		Args:    modelcmd.ExactArgs(1, "a controller name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.destroyController(cmd.Context(), args[0], kill, destroyAll, keepData, yes, timeout)
		},
	}
	if !kill {
		cmd.Flags().BoolVar(&destroyAll, "destroy-all-models", false, "destroy every model (with --force) first")
	}
	cmd.Flags().BoolVar(&keepData, "keep-data", false, "keep the nodes' data directories")
	modelcmd.AddYesFlags(cmd, &yes)
	if kill {
		// Juju's kill-controller -t bounds its attempt to destroy through
		// the API first; here the nodes are killed at once.
		cmd.Flags().DurationVarP(&timeout, "timeout", "t", 0, "accepted as Juju's and ignored: the nodes are killed at once")
	} else {
		cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for a graceful stop before killing")
	}
	return cmd
}

func (a *Commands) destroyController(ctx context.Context, name string, kill, destroyAll, keepData, yes bool, timeout time.Duration) error {
	s, err := a.Store.Load()
	if err != nil {
		return err
	}
	d, ok := s.Controllers[name]
	if !ok {
		// A controller whose bootstrap failed, or whose store entry is
		// gone, may still have its directory (and a process) in the
		// data root: kill-controller stops and removes it.
		dir := filepath.Join(a.Store.Dir, "controllers", name)
		if !controllerNameRe.MatchString(name) || !isDir(dir) {
			return fmt.Errorf("controller %q not found; 'drover controllers' lists the known ones", name)
		}
		if !kill {
			return fmt.Errorf("controller %q is not in the client store, only its directory %s; "+
				"'drover kill-controller %s' stops and removes it", name, dir, name)
		}
		d = &clientstore.ControllerDetails{DataDir: dir}
	}
	if d.DataDir == "" {
		return fmt.Errorf("controller %q was not bootstrapped from this machine; drover can only stop local controllers", name)
	}
	if !yes {
		if err := a.Confirm(fmt.Sprintf("This will stop controller %q and all of its nodes, and delete its data.", name)); err != nil {
			return err
		}
	}
	if !kill {
		if err := a.emptyController(ctx, name, d, s.Accounts[name], destroyAll); err != nil {
			return err
		}
	}
	nodes := localNodes(d)
	p := a.NewProgress(fmt.Sprintf("Stopping %d controller node(s) of %q", len(nodes), name))
	if err := stopNodes(ctx, nodes, kill, timeout, p); err != nil {
		p.Done("")
		return err
	}
	// Then power off the local machines: their agents and workloads.
	if err := a.teardownMachines(ctx, nodes, !keepData); err != nil {
		p.Done("")
		return err
	}
	if !keepData {
		for _, n := range nodes {
			if err := os.RemoveAll(n.dataDir); err != nil {
				p.Done("")
				return fmt.Errorf("controller stopped, but its data directory could not be removed: %w", err)
			}
		}
	}
	uuid := ""
	if err := a.Store.Update(func(s *clientstore.State) error {
		if d := s.Controllers[name]; d != nil {
			uuid = d.UUID
		}
		s.RemoveController(name)
		return nil
	}); err != nil {
		p.Done("")
		return err
	}
	if err := a.Store.ForgetIndex(uuid); err != nil {
		p.Done("")
		return err
	}
	p.Done(fmt.Sprintf("Controller %q destroyed.", name))
	return nil
}

// emptyController refuses while models hold applications, or with
// destroyAll force-destroys every model first.
func (a *Commands) emptyController(ctx context.Context, name string, d *clientstore.ControllerDetails, acct *clientstore.Account, destroyAll bool) error {
	c, err := modelcmd.NewConn(name, d, acct)
	if err != nil {
		return err
	}
	defer c.Client.Close()
	models, err := c.Client.Models(ctx)
	if err != nil {
		return fmt.Errorf("cannot list the controller's models (use kill-controller if it is broken): %w", err)
	}
	var busy []string
	for _, m := range models {
		apps, err := c.Client.Model(m.UUID).Applications(ctx)
		if err != nil {
			return err
		}
		if len(apps) > 0 {
			busy = append(busy, fmt.Sprintf("%s (%d applications)", m.Name, len(apps)))
		}
	}
	if len(busy) > 0 && !destroyAll {
		return fmt.Errorf("controller %q has models with applications: %v; destroy them first or pass --destroy-all-models", name, busy)
	}
	if destroyAll {
		for _, m := range models {
			if _, err := c.Client.Model(m.UUID).Destroy(ctx, true); err != nil && api.CodeOf(err) != api.CodeNotFound {
				return fmt.Errorf("destroy model %q: %w", m.Name, err)
			}
		}
	}
	return nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
