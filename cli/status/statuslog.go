package status

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// squashRepeats shortens a status history for reading, as Juju's
// show-status-log does: where the same status (or the same pair, such as
// a hook's executing then idle) comes again and again in a row for one
// kind, the first occurrence stays and one line says how often it came
// again, at the time of the last ("last status repeated 9 times"). Kinds
// are squashed apart, then merged back in time order.
func squashRepeats(hist []api.StatusHistoryEntry) []api.StatusHistoryEntry {
	byKind := map[string][]api.StatusHistoryEntry{}
	var kinds []string
	for _, h := range hist {
		if _, ok := byKind[h.Kind]; !ok {
			kinds = append(kinds, h.Kind)
		}
		byKind[h.Kind] = append(byKind[h.Kind], h)
	}
	var out []api.StatusHistoryEntry
	for _, k := range kinds {
		out = append(out, squashKind(byKind[k])...)
	}
	slices.SortStableFunc(out, func(x, y api.StatusHistoryEntry) int { return x.Status.Since.Compare(y.Status.Since) })
	return out
}

// squashKind squashes one kind's history (oldest first): blocks of one
// entry, then of two, repeated back to back.
func squashKind(h []api.StatusHistoryEntry) []api.StatusHistoryEntry {
	same := func(a, b api.StatusHistoryEntry) bool {
		return a.Status.Status == b.Status.Status && a.Status.Message == b.Status.Message
	}
	var out []api.StatusHistoryEntry
	for i := 0; i < len(h); {
		squashed := false
		for _, p := range []int{1, 2} {
			reps := 1 // how many times h[i:i+p] comes in a row
			for j := i + p; j+p <= len(h); j += p {
				match := true
				for k := range p {
					match = match && same(h[i+k], h[j+k])
				}
				if !match {
					break
				}
				reps++
			}
			if reps < 2 {
				continue
			}
			out = append(out, h[i:i+p]...)
			last := h[i+reps*p-1]
			what := "last status"
			if p > 1 {
				what = fmt.Sprintf("last %d statuses", p)
			}
			last.Status.Message = fmt.Sprintf("%s repeated %d times", what, reps-1)
			out = append(out, last)
			i += reps * p
			squashed = true
			break
		}
		if !squashed {
			out = append(out, h[i])
			i++
		}
	}
	return out
}

// ShowStatusLogCmd is 'drover show-status-log'.
func (a *Commands) ShowStatusLogCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var kind string
	var n int
	cmd := &cobra.Command{
		Use:   "show-status-log ENTITY",
		Short: "Show an entity's status history",
		Long: `Shows the recorded statuses of a unit, application or machine, oldest first.
Without --type, ENTITY says which: kv/0 a unit (workload and agent), kv an
application, 0 a machine (its agent; --type machine-instance for the
instance). As in Juju, a status set again and again (or a pair, such as a
hook's executing then idle) shows once, then "last status repeated N
times"; --format json and yaml give every entry.`,
		Example: "  drover show-status-log kv/0\n  drover show-status-log kv/0 --type workload -n 5\n  drover show-status-log 0 --type machine",
		Args:    modelcmd.ExactArgs(1, "a unit, application or machine"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			if !cmd.Flags().Changed("type") { // the entity says what it is
				switch {
				case modelcmd.IsMachineID(args[0]):
					kind = api.StatusKindMachine
				case !strings.Contains(args[0], "/"):
					kind = api.StatusKindApplication
				}
			}
			switch kind {
			case "", "unit":
				kind = ""
			case api.StatusKindWorkload, api.StatusKindAgent, api.StatusKindApplication, api.StatusKindMachine,
				api.StatusKindInstance, api.StatusKindModel:
			default:
				return modelcmd.Usagef("--type %q: want unit, workload, juju-unit, application, machine, machine-instance or model", kind)
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				entity := args[0]
				if kind == api.StatusKindModel {
					entity = mc.UUID
				}
				hist, err := mc.Client.Model(mc.UUID).StatusHistory(cmd.Context(), api.StatusHistoryFilter{Entity: entity, Kind: kind, Limit: n})
				if err != nil {
					return err
				}
				slices.SortStableFunc(hist, func(x, y api.StatusHistoryEntry) int {
					if c := x.Status.Since.Compare(y.Status.Since); c != 0 {
						return c
					}
					return int(x.Seq) - int(y.Seq)
				})
				if format.Value != "tabular" {
					return modelcmd.WriteFormatted(a.Stdout, format.Value, hist)
				}
				t := &modelcmd.Table{Color: a.Terminal}
				t.Row("Time", "Type", "Status", "Message")
				for _, h := range squashRepeats(hist) {
					t.Row(h.Status.Since.UTC().Format("02 Jan 2006 15:04:05Z"), h.Kind, modelcmd.StatusCell(h.Status.Status), h.Status.Message)
				}
				return t.Write(a.Stdout)
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	cmd.Flags().StringVar(&kind, "type", "", "status type: unit (workload and agent), workload, juju-unit, application, machine, model")
	cmd.Flags().IntVarP(&n, "lines", "n", 0, "show at most this many entries (0: the server's default)")
	return cmd
}
