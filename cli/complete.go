package cli

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// completeTimeout bounds the controller calls one Tab press makes: a shell
// waiting on an unreachable controller would look hung.
const completeTimeout = 5 * time.Second

// nameKind is what a command's positional arguments name.
type nameKind int

const (
	namesApps nameKind = iota + 1
	namesUnits
	namesAppsAndUnits // status filters, show-status-log
	namesModels
	namesControllers
)

// argNames says what each command's arguments are, for completion. A
// command missing here completes no names (flags still complete).
var argNames = map[string]nameKind{
	"actions": namesApps, "add-unit": namesApps, "config": namesApps, "constraints": namesApps,
	"expose": namesApps, "unexpose": namesApps, "integrate": namesApps, "refresh": namesApps,
	"remove-application": namesApps, "scale": namesApps, "set-constraints": namesApps,
	"show-application": namesApps, "trust": namesApps, "remove-relation": namesApps,
	"remove-unit": namesUnits, "resolved": namesUnits, "show-unit": namesUnits, "run": namesUnits,
	"status": namesAppsAndUnits, "show-status-log": namesAppsAndUnits,
	"destroy-model": namesModels, "show-model": namesModels, "switch": namesModels, "migrate": namesModels,
	"show-controller": namesControllers, "destroy-controller": namesControllers, "kill-controller": namesControllers,
	// wait-for's kinds
	"application": namesApps, "unit": namesUnits, "model": namesModels,
}

// firstArgOnly lists the commands whose later arguments are not names
// (config's KEY=VALUE, scale's N, run's ACTION).
var firstArgOnly = map[string]bool{
	"config": true, "constraints": true, "set-constraints": true, "scale": true, "add-unit": true,
	"refresh": true, "trust": true, "actions": true, "run": true, "destroy-model": true,
	"show-model": true, "switch": true, "migrate": true, "show-controller": true, "destroy-controller": true, "kill-controller": true,
	"application": true, "unit": true, "model": true,
}

// addCompletions teaches the command tree to complete model, application,
// unit and controller names in the positional arguments of the commands
// in argNames. cobra's hidden __complete command, which the generated
// shell scripts call, runs these functions.
func (a *App) addCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if kind, ok := argNames[c.Name()]; ok && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = a.completeArgs(kind, firstArgOnly[c.Name()])
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// addFlagCompletions makes the -m and -c flags of the command a
// completion request (args: what follows __complete) completes complete
// model and controller names. cobra keeps flag completions in a global
// map it never shrinks, so they are added for that one command, and only
// for a completion request: never for every command of every tree the
// interactive shell builds.
func (a *App) addFlagCompletions(root *cobra.Command, args []string) {
	c, _, err := root.Find(args)
	if err != nil {
		return
	}
	if f := c.Flags().Lookup("model"); f != nil && f.Shorthand == "m" {
		_ = c.RegisterFlagCompletionFunc("model", a.completeFlag(namesModels))
	}
	if f := c.Flags().Lookup("controller"); f != nil && f.Shorthand == "c" {
		_ = c.RegisterFlagCompletionFunc("controller", a.completeFlag(namesControllers))
	}
}

func (a *App) completeArgs(kind nameKind, firstOnly bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if firstOnly && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.completeNames(cmd, kind, args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func (a *App) completeFlag(kind nameKind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return a.completeNames(cmd, kind, nil, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNames lists the names of kind starting with prefix, leaving out
// those already on the line. Any failure (no controller, no model, a
// controller that does not answer) completes nothing: Tab never prints an
// error into the user's command line.
func (a *App) completeNames(cmd *cobra.Command, kind nameKind, args []string, prefix string) []string {
	ctx, cancel := context.WithTimeout(cmd.Context(), completeTimeout)
	defer cancel()
	env := a.environment()
	var names []string
	switch kind {
	case namesControllers:
		s, err := env.Store.Load()
		if err != nil {
			return nil
		}
		for name := range s.Controllers {
			names = append(names, name)
		}
	case namesModels:
		ctl := ""
		if f := cmd.Flags().Lookup("controller"); f != nil {
			ctl = f.Value.String()
		}
		c, err := env.Dial(ctl)
		if err != nil {
			return nil
		}
		defer c.Client.Close()
		models, err := c.Client.Models(ctx)
		if err != nil {
			return nil
		}
		for _, m := range models {
			names = append(names, modelcmd.ModelRef(m, c.Account.User))
		}
	default:
		ref := ""
		if f := cmd.Flags().Lookup("model"); f != nil {
			ref = f.Value.String()
		}
		_ = env.WithModel(ctx, ref, func(mc *modelcmd.ModelConn) error {
			fs, err := mc.Client.Model(mc.UUID).Status(ctx)
			if err != nil {
				return err
			}
			names = statusNames(fs, kind)
			return nil
		})
	}
	return pickCompletions(names, args, prefix)
}

// statusNames are the applications and/or units of a model's status.
func statusNames(fs *api.FullStatus, kind nameKind) []string {
	var names []string
	for app, as := range fs.Applications {
		if kind != namesUnits {
			names = append(names, app)
		}
		if kind == namesApps {
			continue
		}
		for unit, us := range as.Units {
			names = append(names, unit)
			for sub := range us.Subordinates {
				names = append(names, sub)
			}
		}
	}
	return names
}

// pickCompletions keeps the names starting with prefix that are not yet
// among args, sorted and without repeats.
func pickCompletions(names, args []string, prefix string) []string {
	seen := make(map[string]bool, len(args))
	for _, a := range args {
		seen[a] = true
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
