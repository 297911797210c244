package migration

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// phases are the hub's migration phases, in order, then the abort's and
// the failed reap's.
var phases = []string{"PRECHECK", "QUIESCE", "EXPORT", "IMPORT", "VALIDATION", "SUCCESS", "LOGTRANSFER", "REAP", "DONE",
	"ABORTING", "ABORTED", "REAPFAILED"}

// MigrationsCmd is 'drover migrations': the hub's migrations, newest
// first.
func (a *Commands) MigrationsCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	var f api.MigrationFilter
	cmd := &cobra.Command{
		Use:   "migrations [--model M] [--for-controller C] [--phase P] [--active]",
		Short: "List the hub's model migrations",
		Long: `Lists the migrations of the models you can see at the hub, newest first:
the migration's ID, the model, the controllers it goes from and to, its
phase, its agents' reports for that phase (ok/failed/pending), when it
started and ended, and the hub's message (why it failed, for one that
did). --model takes a name, OWNER/NAME or UUID; --for-controller a
controller's name, as source or target; --phase one of PRECHECK, QUIESCE,
EXPORT, IMPORT, VALIDATION, SUCCESS, LOGTRANSFER, REAP, DONE, ABORTING,
ABORTED, REAPFAILED; --active keeps those that have not ended.`,
		Example: `  drover migrations
  drover migrations --active
  drover migrations --model shop --format yaml
  drover migrations --for-controller east --phase ABORTED`,
		Args: modelcmd.ExactArgs(0, "no arguments; filter with --model, --for-controller, --phase or --active"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			if f.Phase != "" {
				f.Phase = strings.ToUpper(f.Phase)
				if !slices.Contains(phases, f.Phase) {
					return modelcmd.Usagef("--phase %q: want one of %s", f.Phase, strings.Join(phases, ", "))
				}
			}
			c, err := a.dialHub(ctl.Name)
			if err != nil {
				return err
			}
			defer c.Client.Close()
			if f.Model != "" {
				m, err := a.FindModel(cmd.Context(), c, f.Model)
				if err != nil {
					return err
				}
				f.Model = m.UUID
			}
			list, err := c.Client.Migrations(cmd.Context(), f)
			if err != nil {
				return err
			}
			if list == nil {
				list = []api.Migration{}
			}
			if format.Value != "tabular" {
				return modelcmd.WriteFormatted(a.Stdout, format.Value, list)
			}
			return writeMigrations(a.Env, list)
		},
	}
	ctl.Add(cmd)
	cmd.Flags().StringVar(&f.Model, "model", "", "only this model's migrations: a name, OWNER/NAME or UUID")
	cmd.Flags().StringVar(&f.Controller, "for-controller", "", "only the migrations from or to this controller behind the hub")
	cmd.Flags().StringVar(&f.Phase, "phase", "", "only the migrations in this phase")
	cmd.Flags().BoolVar(&f.Active, "active", false, "only the migrations in progress")
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}

// writeMigrations is migrations' table.
func writeMigrations(e *modelcmd.Env, list []api.Migration) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(e.Stdout, "No migrations.")
		return err
	}
	t := &modelcmd.Table{}
	t.Row("ID", "Model", "From", "To", "Phase", "Agents", "Started", "Ended", "Message")
	for _, m := range list {
		ended := "-"
		if m.EndedAt != nil {
			ended = tableTime(*m.EndedAt)
		}
		ag := m.Agents
		agents := fmt.Sprintf("%d/%d/%d", ag.OK, ag.Failed, ag.Pending)
		t.Row(m.ID, m.ModelName, m.SourceController, m.TargetController, m.Phase, agents,
			tableTime(m.StartedAt), ended, modelcmd.OrDash(cmp.Or(m.Failure, m.Message)))
	}
	return t.Write(e.Stdout)
}

func tableTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(modelcmd.TableTimeLayout)
}
