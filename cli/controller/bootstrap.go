package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

var controllerNameRe = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// BootstrapCmd is 'drover bootstrap'.
func (a *Commands) BootstrapCmd() *cobra.Command {
	var dataDir, listen, raftListen string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "bootstrap [NAME]",
		Short: "Start a local controller and register it",
		Long: `Starts a one-node controller (droverd spoke --bootstrap) on this machine in
the background, waits until it answers, registers it in the client store with
its admin credential, and makes it the current controller.

droverd is looked for next to the drover binary, then on PATH. The node's
data and log (droverd.log) are in --data-dir (default: the client store's
controllers/NAME directory). Grow it to three nodes with 'drover enable-ha';
stop it with 'drover destroy-controller' or 'drover kill-controller'.`,
		Example: `  drover bootstrap
  drover bootstrap lab --listen 127.0.0.1:18070`,
		Args: modelcmd.RangeArgs(0, 1, "at most a controller name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "local"
			if len(args) == 1 {
				name = args[0]
			}
			return a.bootstrap(cmd.Context(), name, dataDir, listen, raftListen, timeout)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "controller data directory (default: <client store>/controllers/NAME)")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:17070", "HTTPS API address of the controller")
	cmd.Flags().StringVar(&raftListen, "raft-listen", "", "raft address (default: the API port + 1)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the controller to answer")
	return cmd
}

func (a *Commands) bootstrap(ctx context.Context, name, dataDir, listen, raftListen string, timeout time.Duration) error {
	if !controllerNameRe.MatchString(name) {
		return modelcmd.Usagef("invalid controller name %q: use letters, digits, '.', '_' and '-'", name)
	}
	s, err := a.Store.Load()
	if err != nil {
		return err
	}
	if _, ok := s.Controllers[name]; ok {
		return fmt.Errorf("controller %q already exists; choose another name or remove it with 'drover destroy-controller %s'", name, name)
	}
	if dataDir == "" {
		dataDir = filepath.Join(a.Store.Dir, "controllers", name)
	}
	if dataDir, err = filepath.Abs(dataDir); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dataDir, credentialFile)); err == nil {
		if dataDir == filepath.Join(a.Store.Dir, "controllers", name) {
			return fmt.Errorf("%s already holds a controller %q that the client store does not know; "+
				"'drover kill-controller %s' stops and removes it", dataDir, name, name)
		}
		return fmt.Errorf("%s already holds a controller; remove it or choose another --data-dir", dataDir)
	}
	exe, err := a.findDroverd()
	if err != nil {
		return err
	}
	fresh, err := emptyOrMissing(dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("cannot create the data directory: %w", err)
	}
	args := []string{"spoke", "--bootstrap", "--name", name, "--data-dir", dataDir, "--listen", listen}
	if raftListen != "" {
		args = append(args, "--raft-listen", raftListen)
	}
	p := a.NewProgress(fmt.Sprintf("Starting controller %q on %s", name, listen))
	pid, exited, err := startDroverd(exe, dataDir, args)
	if err != nil {
		p.Done("")
		return errors.Join(err, a.undoBootstrap(ctx, dataDir, 0, fresh, p))
	}
	c, info, err := a.waitReady(ctx, dataDir, exited, timeout, p)
	if err != nil {
		p.Done("")
		return errors.Join(err, a.undoBootstrap(ctx, dataDir, pid, fresh, p))
	}
	defer c.Client.Close()
	who, err := c.Client.WhoAmI(ctx)
	if err != nil {
		p.Done("")
		return errors.Join(err, a.undoBootstrap(ctx, dataDir, pid, fresh, p))
	}
	err = a.Store.Update(func(s *clientstore.State) error {
		if _, ok := s.Controllers[name]; ok {
			return fmt.Errorf("controller %q was registered meanwhile", name)
		}
		d := c.Details
		d.DataDir, d.PID = dataDir, pid
		d.Version, d.NodeCount = info.Version, len(info.Nodes)
		s.Controllers[name] = d
		s.Accounts[name] = &clientstore.Account{User: c.Account.User, Password: c.Account.Password, Access: who.Access}
		s.CurrentController = name
		s.ModelsOf(name)
		return nil
	})
	if err != nil {
		p.Done("")
		return errors.Join(err, a.undoBootstrap(ctx, dataDir, pid, fresh, p))
	}
	// The controller's own node record may not be replicated yet (info
	// then lists no address); the credential's address is the same one.
	p.Done(fmt.Sprintf("Bootstrap complete, controller %q (%s) is now available at %s.", name, info.Version, c.Details.APIAddresses[0]))
	fmt.Fprintf(a.Stderr, "Now you can run\n\tdrover add-model <model-name>\nto create a new model to deploy workloads.\n")
	if os.Geteuid() != 0 { // the controller runs as this user (spoke/provider/local)
		fmt.Fprintf(a.Stderr, "WARNING: the controller does not run as root, so its local machines run as your user: "+
			"any charm deployed to it can read the controller's keys and every machine's credentials. "+
			"Bootstrap as root to give each machine a user of its own (docs/security.md).\n")
	}
	return nil
}

// undoBootstrap leaves nothing behind a failed bootstrap, so that a retry
// starts afresh: it kills the node (pid, when started), powers off and
// removes its local machines, and empties the data dir when bootstrap
// found it empty or missing (removing it when it was missing). The error
// says what could not be undone.
func (a *Commands) undoBootstrap(ctx context.Context, dataDir string, pid int, fresh freshness, p *modelcmd.Progress) error {
	ctx = context.WithoutCancel(ctx)
	if pid > 0 {
		if err := stopNodes(ctx, []localNode{{dataDir: dataDir, pid: pid}}, true, 0, p); err != nil {
			return fmt.Errorf("stopping the controller process %d failed: %w; remove %s once it is gone", pid, err, dataDir)
		}
	}
	if err := a.teardownMachines(ctx, []localNode{{dataDir: dataDir}}, true); err != nil {
		return fmt.Errorf("%w; 'drover kill-controller' removes what is left", err)
	}
	switch fresh {
	case missing:
		if err := os.RemoveAll(dataDir); err != nil {
			return fmt.Errorf("the data directory could not be removed: %w", err)
		}
	case empty:
		entries, err := os.ReadDir(dataDir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dataDir, e.Name())); err != nil {
				return fmt.Errorf("the data directory could not be emptied: %w", err)
			}
		}
	}
	return nil
}

// freshness is what bootstrap found at its data dir.
type freshness int

const (
	missing  freshness = iota // no directory: bootstrap makes it
	empty                     // an empty directory
	occupied                  // a directory with files bootstrap leaves alone
)

func emptyOrMissing(dir string) (freshness, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return missing, nil
	case err != nil:
		return occupied, fmt.Errorf("cannot read the data directory: %w", err)
	case len(entries) == 0:
		return empty, nil
	}
	return occupied, nil
}

// waitReady waits for the node's credential file and a successful call.
func (a *Commands) waitReady(ctx context.Context, dataDir string, exited <-chan struct{}, timeout time.Duration, p *modelcmd.Progress) (*modelcmd.Conn, *api.ControllerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		if cred, err := readAdminCredential(dataDir); err == nil {
			p.Update("Waiting for controller %q to answer at %v", cred.ControllerName, cred.APIAddresses)
			d := &clientstore.ControllerDetails{UUID: cred.ControllerUUID, APIAddresses: cred.APIAddresses, CACert: cred.CACert}
			c, err := modelcmd.NewConn(cred.ControllerName, d, &clientstore.Account{User: cred.User, Password: cred.Password})
			if err != nil {
				return nil, nil, err
			}
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
			info, err := c.Client.ControllerInfo(cctx)
			ccancel()
			if err == nil {
				if len(info.APIAddresses) > 0 {
					d.APIAddresses = info.APIAddresses
				}
				return c, info, nil
			}
			c.Client.Close()
			lastErr = err
		} else if !errors.Is(err, os.ErrNotExist) {
			lastErr = err
		}
		select {
		case <-exited:
			return nil, nil, fmt.Errorf("the controller process exited during bootstrap; its log ends with:\n%s", logTail(dataDir, 10))
		case <-ctx.Done():
			if lastErr == nil {
				lastErr = ctx.Err()
			}
			// The log goes with the data dir bootstrap removes: its end
			// is quoted here.
			return nil, nil, fmt.Errorf("the controller did not become ready in %s (%v); its log ends with:\n%s", timeout, lastErr,
				logTail(dataDir, 10))
		case <-tick.C:
		}
	}
}
