// Package cli is the drover command line client. It reaches controllers
// only through the api package (never server code: a test enforces it), and
// keeps its own state in the client store (see Store).
//
// Every command is built fresh for each run (so the interactive shell can
// run commands one after another without flag values leaking between
// them); output goes to App.Stdout, errors to App.Stderr as
// "ERROR <message>", and Run returns the exit code: 0 ok, 1 error, 2 usage.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/safetext"
	"github.com/droverhq/drover/internal/version"
)

// Version is the client version; the build may override it.
var Version = version.Version

// App is one drover invocation's environment.
type App struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (os.Getenv in main; a map in tests).
	Getenv func(string) string
	// Now is the clock (status timestamps, debug-log lines).
	Now func() time.Time
	// Terminal is whether Stdout is a terminal: colour, spinners and
	// in-place redraws only then. StdinTerminal gates prompts and the shell.
	Terminal      bool
	StdinTerminal bool
	// Executable is drover's own path, to find droverd next to it.
	Executable string
	// Width is the terminal width for --watch redraws (0: unknown).
	Width int

	store *Store
	// atHub is whether the command's connection is to a hub (explain).
	atHub bool
}

// Run runs one command line and returns the exit code. With no arguments
// on a terminal it opens the interactive shell.
func (a *App) Run(ctx context.Context, args []string) int {
	if a.Getenv == nil {
		a.Getenv = os.Getenv
	}
	if a.Now == nil {
		a.Now = time.Now
	}
	dir, err := DefaultStoreDir(a.Getenv)
	if err != nil {
		return a.fail(err)
	}
	a.store = &Store{Dir: dir}
	if len(args) == 0 && a.Terminal && a.StdinTerminal {
		return a.shell(ctx)
	}
	return a.execute(ctx, args)
}

// execute runs one command; Ctrl-C cancels that command only.
func (a *App) execute(ctx context.Context, args []string) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := a.newRoot()
	root.SetArgs(args)
	if _, _, err := root.Find(args); err != nil && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return a.fail(usagef("unknown command %q; run 'drover help' for the list of commands", args[0]))
	}
	err := root.ExecuteContext(ctx)
	return a.fail(err)
}

// fail prints err as Juju does and returns its exit code.
func (a *App) fail(err error) int {
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(a.Stderr, "ERROR %s\n", ue.err)
		return 2
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(a.Stderr, "ERROR interrupted")
		return 1
	}
	// The message may quote a controller's or the hub's words: shown so
	// that it cannot drive the terminal.
	fmt.Fprintf(a.Stderr, "ERROR %s\n", safetext.TerminalLines(explain(err, a.atHub)))
	return 1
}

// group ids for the help listing.
const (
	groupController = "controller"
	groupModel      = "model"
	groupApp        = "application"
	groupOps        = "operations"
	groupClient     = "client"
)

func (a *App) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "drover",
		Short: "Drover: deploy, integrate, scale and operate applications with charms",
		Long: `drover is the client of Drover controllers. Its commands, flags and outputs
follow Juju's: bootstrap a controller, add a model, deploy charms and bundles,
integrate them, and watch 'drover status'.

With no arguments on a terminal, drover opens an interactive shell that runs
the same commands.

Environment: DROVER_CONTROLLER and DROVER_MODEL ([controller:]model) name
the controller and model to work on instead of the current ones, for this
process only, as JUJU_CONTROLLER and JUJU_MODEL do for juju ('drover
switch' refuses while they are set); DROVER_DATA is the client store's
directory; DROVER_CLIENT_ID and DROVER_CLIENT_SECRET are a service
account's credentials for 'drover login'.`,
		Example: `  drover bootstrap local
  drover add-model demo
  drover deploy ./charms/kv
  drover status --watch`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		Version:           Version,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see 'drover help %s')", err, cmd.Name())}
	})
	root.AddGroup(
		&cobra.Group{ID: groupController, Title: "Controllers:"},
		&cobra.Group{ID: groupModel, Title: "Models:"},
		&cobra.Group{ID: groupApp, Title: "Applications and integrations:"},
		&cobra.Group{ID: groupOps, Title: "Status and day-2 operations:"},
		&cobra.Group{ID: groupClient, Title: "Client:"},
	)
	root.SetHelpCommandGroupID(groupClient)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupController, a.bootstrapCmd(), a.controllersCmd(), a.showControllerCmd(), a.switchCmd(),
		a.enableHACmd(), a.destroyControllerCmd(false), a.destroyControllerCmd(true), a.whoamiCmd(),
		a.loginCmd(), a.logoutCmd(), a.addControllerCmd(), a.removeControllerCmd(), a.setControllerDeprecatedCmd(), a.grantCmd(false), a.grantCmd(true), a.addGroupCmd(),
		a.groupsCmd(), a.showGroupCmd(), a.renameGroupCmd(), a.removeGroupCmd(), a.usersCmd(), a.showUserCmd(),
		a.userStateCmd(true), a.userStateCmd(false), a.removeUserCmd(), a.signingKeysCmd(), a.rotateSigningKeyCmd(),
		a.memberCmd(true), a.memberCmd(false), a.auditCmd(), a.createHubTokenCmd(), a.removeHubTrustCmd())
	add(groupModel, a.addModelCmd(), a.cloudsCmd(), a.regionsCmd(), a.modelsCmd(), a.showModelCmd(), a.destroyModelCmd(), a.modelConfigCmd(), a.setModelOwnerCmd())
	add(groupApp, a.deployCmd(), a.configCmd(), a.addUnitCmd(), a.removeUnitCmd(), a.scaleCmd(),
		a.removeApplicationCmd(), a.exposeCmd(true), a.exposeCmd(false), a.integrateCmd(), a.removeRelationCmd(), a.refreshCmd(),
		a.machinesCmd(), a.showMachineCmd(), a.addMachineCmd(), a.removeMachineCmd(), a.showApplicationCmd(), a.showUnitCmd(), a.constraintsCmd(), a.setConstraintsCmd(), a.trustCmd())
	add(groupOps, a.statusCmd(), a.runCmd(), a.execCmd(), a.showTaskCmd(), a.cancelTaskCmd(), a.actionsCmd(), a.resolvedCmd(),
		a.showStatusLogCmd(), a.debugLogCmd())
	add(groupClient, a.versionCmd(), a.completionCmd())
	root.InitDefaultHelpCmd() // now, so that Find and the shell know it
	return root
}

// Argument validators that report usage errors.
