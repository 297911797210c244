// Package cli is the drover command line client. It reaches controllers
// only through the api package (never server code: a test enforces it), and
// keeps its own state in the client store (package clientstore).
//
// This package is the entry point (App), the command tree and the
// interactive shell. The commands live in packages by area, as Juju's
// cmd/juju does: controller, model, application, machine, action, status,
// user, hubadmin and migration, each with a Commands type over the shared
// modelcmd.Env (streams, clock, client store, connections, output).
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

	"github.com/droverhq/drover/cli/action"
	"github.com/droverhq/drover/cli/application"
	"github.com/droverhq/drover/cli/controller"
	"github.com/droverhq/drover/cli/hubadmin"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/machine"
	"github.com/droverhq/drover/cli/migration"
	"github.com/droverhq/drover/cli/model"
	"github.com/droverhq/drover/cli/status"
	"github.com/droverhq/drover/cli/user"
	"github.com/droverhq/drover/cli/waitfor"
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
	// Name is the name drover was invoked as (the base of argv[0]; empty:
	// "drover"): installed as "juju", usage lines, examples and the
	// completion scripts say "juju".
	Name string

	// env is what the commands share; Run makes it.
	env *modelcmd.Env
}

// environment is the commands' view of a: its fields as they are now,
// with the client store and what the last command learnt (AtHub) kept
// across the shell's commands.
func (a *App) environment() *modelcmd.Env {
	if a.env == nil {
		a.env = &modelcmd.Env{}
	}
	e := a.env
	e.Stdin, e.Stdout, e.Stderr = a.Stdin, a.Stdout, a.Stderr
	e.Getenv, e.Now = a.Getenv, a.Now
	e.Terminal, e.StdinTerminal = a.Terminal, a.StdinTerminal
	e.Executable, e.Width = a.Executable, a.Width
	return a.env
}

// Run runs one command line and returns the exit code. With no arguments
// it runs the shell: the interactive one on a terminal, else the commands
// read from stdin, one per line.
func (a *App) Run(ctx context.Context, args []string) int {
	if a.Getenv == nil {
		a.Getenv = os.Getenv
	}
	if a.Now == nil {
		a.Now = time.Now
	}
	dir, err := clientstore.DefaultStoreDir(a.Getenv)
	if err != nil {
		return a.fail(err)
	}
	a.environment().Store = &clientstore.Store{Dir: dir}
	if len(args) == 0 && a.StdinTerminal && a.Terminal {
		return a.shell(ctx)
	}
	if len(args) == 0 && !a.StdinTerminal && a.Stdin != nil {
		return a.script(ctx, a.Stdin)
	}
	return a.execute(ctx, args)
}

// execute runs one command; Ctrl-C cancels that command only.
func (a *App) execute(ctx context.Context, args []string) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := a.newRoot()
	root.SetArgs(args)
	if len(args) > 0 && isCompletionRequest(args[0]) {
		a.addFlagCompletions(root, args[1:])
	} else if _, _, err := root.Find(args); err != nil && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return a.fail(modelcmd.Usagef("unknown command %q; run '%s help' for the list of commands", args[0], a.name()))
	}
	err := root.ExecuteContext(ctx)
	if rerr := a.environment().RecordIndexes(); rerr != nil {
		// The command's own outcome stands; the next one may read a node
		// that lags behind this one's writes.
		fmt.Fprintf(a.Stderr, "WARNING cannot keep the controller's raft index in the client store: %v\n", rerr)
	}
	return a.fail(err)
}

// fail prints err as Juju does and returns its exit code.
func (a *App) fail(err error) int {
	if err == nil {
		return 0
	}
	var ue modelcmd.UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(a.Stderr, "ERROR %s\n", ue.Err)
		return 2
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(a.Stderr, "ERROR interrupted")
		return 1
	}
	// The message may quote a controller's or the hub's words: shown so
	// that it cannot drive the terminal.
	fmt.Fprintf(a.Stderr, "ERROR %s\n", safetext.TerminalLines(modelcmd.Explain(err, a.environment().AtHub)))
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
		Use:   a.name(),
		Short: "Drover: deploy, integrate, scale and operate applications with charms",
		Long: `drover is the client of Drover controllers. Its commands, flags and outputs
follow Juju's: bootstrap a controller, add a model, deploy charms and bundles,
integrate them, and watch 'drover status'.

With no arguments, drover runs a shell: on a terminal an interactive one,
otherwise the commands it reads from stdin, one per line ('#' starts a
comment), as 'drover LINE' would.

Environment: DROVER_CONTROLLER and DROVER_MODEL ([controller:]model) name
the controller and model to work on instead of the current ones, for this
process only, as JUJU_CONTROLLER and JUJU_MODEL do for juju ('drover
switch' refuses while they are set); DROVER_DATA is the client store's
directory; DROVER_CLIENT_ID and DROVER_CLIENT_SECRET are a service
account's credentials for 'drover login'.`,
		Example: `  drover bootstrap local
  drover add-model demo
  drover deploy ./charms/kvstore
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
		return modelcmd.UsageError{Err: fmt.Errorf("%w (see '%s help %s')", err, a.name(), cmd.Name())}
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
	env := a.environment()
	act, app, ctl := &action.Commands{Env: env}, &application.Commands{Env: env}, &controller.Commands{Env: env}
	hub, mach, mdl := &hubadmin.Commands{Env: env}, &machine.Commands{Env: env}, &model.Commands{Env: env}
	st, usr, wf := &status.Commands{Env: env}, &user.Commands{Env: env}, &waitfor.Commands{Env: env}
	mig := &migration.Commands{Env: env}
	add(groupController, ctl.BootstrapCmd(), ctl.ControllersCmd(), ctl.ShowControllerCmd(), ctl.SwitchCmd(),
		ctl.EnableHACmd(), ctl.DestroyControllerCmd(false), ctl.DestroyControllerCmd(true), ctl.WhoamiCmd(),
		usr.LoginCmd(), usr.LogoutCmd(), hub.AddControllerCmd(), hub.RemoveControllerCmd(), hub.SetControllerDeprecatedCmd(), hub.GrantCmd(false), hub.GrantCmd(true), usr.AddGroupCmd(),
		usr.GroupsCmd(), usr.ShowGroupCmd(), usr.RenameGroupCmd(), usr.RemoveGroupCmd(), usr.UsersCmd(), usr.ShowUserCmd(),
		usr.UserStateCmd(true), usr.UserStateCmd(false), usr.RemoveUserCmd(), hub.SigningKeysCmd(), hub.RotateSigningKeyCmd(),
		usr.MemberCmd(true), usr.MemberCmd(false), hub.AuditCmd(), ctl.CreateHubTokenCmd(), ctl.RemoveHubTrustCmd(),
		mig.DrainControllerCmd())
	add(groupModel, mdl.AddModelCmd(), mdl.CloudsCmd(), mdl.RegionsCmd(), mdl.ModelsCmd(), mdl.ShowModelCmd(), mdl.DestroyModelCmd(), mdl.ModelConfigCmd(), mdl.ModelConstraintsCmd(), mdl.SetModelConstraintsCmd(), hub.SetModelOwnerCmd(),
		mig.MigrateCmd(), mig.MigrationsCmd())
	add(groupApp, app.DeployCmd(), app.ConfigCmd(), app.AddUnitCmd(), app.RemoveUnitCmd(), app.ScaleCmd(),
		app.RemoveApplicationCmd(), app.ExposeCmd(true), app.ExposeCmd(false), app.IntegrateCmd(), app.RemoveRelationCmd(), app.RefreshCmd(),
		app.ResourcesCmd(), app.AttachResourceCmd(),
		mach.MachinesCmd(), mach.ShowMachineCmd(), mach.AddMachineCmd(), mach.RemoveMachineCmd(), app.ShowApplicationCmd(), app.ShowUnitCmd(), app.ConstraintsCmd(), app.SetConstraintsCmd(), app.TrustCmd())
	add(groupOps, st.StatusCmd(), act.RunCmd(), act.ExecCmd(), act.ShowTaskCmd(), act.CancelTaskCmd(), act.ActionsCmd(), act.ResolvedCmd(),
		act.OperationsCmd(), act.ShowOperationCmd(),
		st.ShowStatusLogCmd(), st.DebugLogCmd(), wf.WaitForCmd())
	add(groupClient, a.versionCmd(), a.completionCmd())
	root.InitDefaultHelpCmd() // now, so that Find and the shell know it
	a.addCompletions(root)
	if name := a.name(); name != "drover" {
		renameExamples(root, name)
	}
	return root
}

// name is what drover was invoked as.
func (a *App) name() string {
	if a.Name == "" {
		return "drover"
	}
	return a.Name
}

// renameExamples makes the examples' command lines start with name, the
// name drover was invoked as. Prose and messages keep saying drover: the
// product, and a command installed whatever other name it has.
func renameExamples(c *cobra.Command, name string) {
	lines := strings.Split(c.Example, "\n")
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if rest, ok := strings.CutPrefix(trimmed, "drover "); ok {
			lines[i] = l[:len(l)-len(trimmed)] + name + " " + rest
		}
		lines[i] = strings.ReplaceAll(lines[i], "<(drover ", "<("+name+" ")
		lines[i] = strings.ReplaceAll(lines[i], "| drover ", "| "+name+" ")
	}
	c.Example = strings.Join(lines, "\n")
	for _, sub := range c.Commands() {
		renameExamples(sub, name)
	}
}

// isCompletionRequest is whether arg is the hidden command the completion
// scripts call (cobra adds it when it runs, so Find does not know it).
func isCompletionRequest(arg string) bool {
	return arg == cobra.ShellCompRequestCmd || arg == cobra.ShellCompNoDescRequestCmd
}

// Argument validators that report usage errors.
