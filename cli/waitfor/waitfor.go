// Package waitfor owns 'drover wait-for model|application|unit|machine',
// Juju's wait-for: follow the model's watch until an entity satisfies a
// goal-state query (package query), or a timeout passes.
//
// An entity that does not exist yet is waited for, as in Juju; a query
// naming something the entity's scope lacks is refused before waiting.
package waitfor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/query"
)

// Commands builds the wait-for commands on one invocation's environment.
type Commands struct{ *modelcmd.Env }

// defaultTimeout is Juju's.
const defaultTimeout = 10 * time.Minute

// kind is one entity kind wait-for follows.
type kind struct {
	name, arg, query, example string
	// find is the entity's scope in a status, or false when absent.
	find func(fs *api.FullStatus, name string) (query.Scope, bool)
	// blank is a scope with every name the kind offers, to check a query.
	blank query.Scope
}

var kinds = []kind{
	{
		name: "model", arg: "NAME", query: `life=="alive" && status=="available"`,
		example: `forEach(applications, app => app.status == "active")`,
		find: func(fs *api.FullStatus, name string) (query.Scope, bool) {
			return modelScope(fs), true
		},
		blank: modelScope(&api.FullStatus{}),
	},
	{
		name: "application", arg: "NAME", query: `life=="alive" && status=="active"`,
		example: `len(units) == 3 && forEach(units, unit => unit.workload-status == "active")`,
		find: func(fs *api.FullStatus, name string) (query.Scope, bool) {
			as, ok := fs.Applications[name]
			if !ok {
				return nil, false
			}
			return appScope(fs, name, as), true
		},
		blank: appScope(&api.FullStatus{}, "", api.ApplicationStatus{}),
	},
	{
		name: "unit", arg: "NAME", query: `life=="alive" && workload-status=="active"`,
		example: `workload-status=="active" && agent-status=="idle"`,
		find:    findUnit,
		blank:   unitScope(&api.FullStatus{}, "", "", api.UnitStatus{}),
	},
	{
		name: "machine", arg: "ID", query: `life=="alive" && status=="started"`,
		example: `status=="started"`,
		find: func(fs *api.FullStatus, id string) (query.Scope, bool) {
			ms, ok := fs.Machines[id]
			if !ok {
				return nil, false
			}
			return machineScope(id, ms), true
		},
		blank: machineScope("", api.MachineStatus{}),
	},
}

// WaitForCmd is 'drover wait-for'.
func (a *Commands) WaitForCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wait-for model|application|unit|machine NAME",
		Short: "Wait for a model, application, unit or machine to reach a goal state",
		Long: `Follows the model's changes until the entity satisfies the --query goal
state, as 'juju wait-for' does, then exits 0; after --timeout it exits 1
saying what it last saw. An entity that does not exist yet is waited for.

The query language is Juju's: names of the entity (life, status,
workload-status, agent-status, units, machines, ...), strings in quotes,
numbers, true and false; == != < <= > >=; && || ! and parentheses;
len(LIST), startsWith(S, PREFIX), endsWith(S, SUFFIX), and
forEach(LIST, x => CONDITION), true when every element satisfies it.
'drover help wait-for KIND' lists the names each kind offers.`,
		Example: `  drover wait-for application kvstore
  drover wait-for unit kvstore/0 --query 'workload-status=="active"'
  drover wait-for application kvstore --query 'len(units) == 3 && forEach(units, unit => unit.workload-status == "active")'
  drover wait-for model demo --query 'forEach(applications, app => app.status == "active")' --timeout 5m`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return modelcmd.Usagef("wait-for: name what to wait for: model, application, unit or machine")
			}
			return modelcmd.Usagef("wait-for: unknown kind %q: want model, application, unit or machine", args[0])
		},
	}
	for _, k := range kinds {
		cmd.AddCommand(a.kindCmd(k))
	}
	return cmd
}

func (a *Commands) kindCmd(k kind) *cobra.Command {
	var mo modelcmd.ModelOpt
	var q string
	var timeout time.Duration
	var summary bool
	sub := &cobra.Command{
		Use:   k.name + " " + k.arg,
		Short: "Wait for " + article(k.name) + " " + k.name + " to reach a goal state",
		Long: fmt.Sprintf(`Waits until the %s satisfies --query (default: %s).

Names a query sees: %s.`, k.name, k.query, scopeNames(k.blank)),
		Example: fmt.Sprintf("  drover wait-for %s %s --query '%s'", k.name, exampleName(k.name), k.example),
		Args:    modelcmd.ExactArgs(1, "the "+k.name+"'s name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			x, err := parseQuery(q, k)
			if err != nil {
				return err
			}
			if timeout <= 0 {
				return modelcmd.Usagef("wait-for: --timeout must be positive, such as 10m")
			}
			ref := mo.Ref
			if k.name == "model" {
				if ref != "" {
					return modelcmd.Usagef("wait-for model: name the model as the argument, not with -m")
				}
				ref = args[0]
			}
			return a.WithModel(cmd.Context(), ref, func(mc *modelcmd.ModelConn) error {
				return a.wait(cmd.Context(), mc, k, args[0], x, timeout, summary)
			})
		},
	}
	if k.name != "model" {
		mo.Add(sub)
	}
	sub.Flags().StringVar(&q, "query", k.query, "the goal state")
	sub.Flags().DurationVar(&timeout, "timeout", defaultTimeout, "how long to wait before giving up")
	sub.Flags().BoolVar(&summary, "summary", true, "say which goal state was reached")
	return sub
}

func article(noun string) string {
	if noun[0] == 'a' {
		return "an"
	}
	return "a"
}

func exampleName(kind string) string {
	switch kind {
	case "model":
		return "demo"
	case "unit":
		return "kvstore/0"
	case "machine":
		return "0"
	}
	return "kvstore"
}

// parseQuery parses q and checks it against the kind's names, so that a
// typo is a usage error before any waiting, not a wait that cannot end.
func parseQuery(q string, k kind) (query.Expr, error) {
	x, err := query.Parse(q)
	if err != nil {
		return nil, modelcmd.Usagef("wait-for %s: %v", k.name, err)
	}
	var ee *query.EvalError
	if _, err := query.Eval(x, k.blank); errors.As(err, &ee) {
		return nil, modelcmd.Usagef("wait-for %s: %v", k.name, err)
	}
	return x, nil
}

func scopeNames(s query.Scope) string {
	names := modelcmd.SortedKeys(s)
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// wait follows mc's model until the entity satisfies x.
func (a *Commands) wait(ctx context.Context, mc *modelcmd.ModelConn, k kind, name string, x query.Expr, timeout time.Duration, summary bool) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	src, err := a.Follow(wctx, mc)
	if err != nil {
		return err
	}
	defer src.Close()
	last := fmt.Sprintf("%s %q not found", k.name, name)
	for {
		f, err := src.Next(wctx)
		if err == nil && modelcmd.ModelRemoved(f, mc.UUID) {
			return fmt.Errorf("model %q was destroyed while waiting for %s %q", mc.Model, k.name, name)
		}
		var fs *api.FullStatus
		if err == nil {
			fs = f.Status
			if f.Type != api.FrameReset || fs == nil {
				fs, err = mc.Client.Model(mc.UUID).Status(wctx, api.ReadOptions{Index: f.Index})
			}
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return fmt.Errorf("timed out after %s waiting for %s %q to reach %s; last: %s", timeout, k.name, name, x, last)
			}
			return err
		}
		scope, ok := k.find(fs, name)
		if !ok {
			last = fmt.Sprintf("%s %q not found", k.name, name)
			continue
		}
		done, err := query.Eval(x, scope)
		if err != nil {
			return fmt.Errorf("wait-for %s %q: %w", k.name, name, err)
		}
		if done {
			if summary {
				fmt.Fprintf(a.Stdout, "%s %q reached %s\n", k.name, name, x)
			}
			return nil
		}
		last = describe(k, scope)
	}
}

// describe is what the entity looked like, for a timeout's message.
func describe(k kind, s query.Scope) string {
	switch k.name {
	case "unit":
		return fmt.Sprintf("life %v, workload-status %v, agent-status %v", s["life"], s["workload-status"], s["agent-status"])
	case "application":
		return fmt.Sprintf("life %v, status %v, %d unit(s)", s["life"], s["status"], len(s["units"].([]query.Value)))
	}
	return fmt.Sprintf("life %v, status %v", s["life"], s["status"])
}
