package status

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// StatusCmd is 'drover status'.
func (a *Commands) StatusCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var watch, color, noColor, relations bool
	cmd := &cobra.Command{
		Use:   "status [APPLICATION|UNIT|MACHINE...]",
		Short: "Show the model's applications, units, machines and integrations",
		Long: `Shows the status of the model as 'juju status' does: the Model line, then
App, Unit (the leader marked *, subordinates indented under their
principal), Machine and Integration sections. Arguments filter by
application, unit or machine name (globs allowed).

--format json and yaml print the same shape as 'juju status --format json'
(model, machines, applications → base, relations as {endpoint:
[{related-application, interface, scope}]}, units → workload-status,
juju-status, open-ports, subordinates; relations), so scripts written for
Juju keep working; --format short (or oneline, line) prints a line per unit, as
Juju's: "- kv/0: 127.0.0.1 (agent:idle, workload:active) 7070/tcp", its
subordinates indented under it. --watch redraws the status live from the model's event stream.
Colour is used on a terminal only, unless --color or --no-color.`,
		Example: `  drover status
  drover status kv web/0
  drover status --format json | jq '.applications.kv.units'
  drover status --watch`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				opt := statusOptions{color: (a.Terminal || color) && !noColor, relations: relations}
				if watch {
					return a.watchStatus(cmd.Context(), mc, args, format.Value, opt)
				}
				fs, err := mc.Client.Model(mc.UUID).Status(cmd.Context())
				if err != nil {
					return err
				}
				return a.renderStatus(fs, args, format.Value, opt, &bytes.Buffer{})
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml", "short", "oneline", "line")
	cmd.Flags().BoolVar(&watch, "watch", false, "redraw live as the model changes (Ctrl-C to stop)")
	cmd.Flags().BoolVar(&color, "color", false, "use ANSI colours even when not on a terminal")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "never use colours")
	cmd.Flags().BoolVar(&relations, "relations", false, "always show the Integration section")
	cmd.Flags().BoolVar(&relations, "integrations", false, "the same as --relations")
	return cmd
}

// renderStatus writes one status through buf, so a redraw is one write.
func (a *Commands) renderStatus(fs *api.FullStatus, filters []string, format string, opt statusOptions, buf *bytes.Buffer) error {
	fs, err := filterStatus(fs, filters)
	if err != nil {
		return err
	}
	buf.Reset()
	switch format {
	case "tabular":
		err = writeStatusTabular(buf, fs, opt)
	case "short", "oneline", "line":
		writeStatusOneline(buf, fs)
	default:
		err = modelcmd.WriteFormatted(buf, format, fs)
	}
	if err != nil {
		return err
	}
	_, err = a.Stdout.Write(buf.Bytes())
	return err
}

// watchStatus redraws the status on every change of the model's watch:
// a reset frame carries the full status; after a delta the status is
// fetched again at (at least) that frame's index.
func (a *Commands) watchStatus(ctx context.Context, mc *modelcmd.ModelConn, filters []string, format string, opt statusOptions) error {
	w, err := a.Follow(ctx, mc)
	if err != nil {
		return err
	}
	defer w.Close()
	if o, ok := w.(interface{ OnOutage(func(error)) }); ok {
		o.OnOutage(a.SayOutage("Watch", mc))
	}
	var buf bytes.Buffer
	gone := func(err error) error { return lostModel(mc, "watched", err) }
	for {
		f, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C ends a watch normally
			}
			return gone(err)
		}
		if modelcmd.ModelRemoved(f, mc.UUID) {
			fmt.Fprintf(a.Stderr, "Model %q is gone: it was destroyed.\n", mc.Model)
			return nil // the watch saw the model to its end
		}
		fs := f.Status
		if f.Type != api.FrameReset || fs == nil {
			if fs, err = a.statusAt(ctx, mc, f.Index); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return gone(err)
			}
		}
		if a.Terminal {
			fmt.Fprint(a.Stdout, "\x1b[H\x1b[2J") // home and clear: redraw in place
		} else {
			fmt.Fprintln(a.Stdout)
		}
		if err := a.renderStatus(fs, filters, format, opt, &buf); err != nil {
			return err
		}
	}
}

// statusAt fetches the model's status at (at least) index for a watch. A
// controller or hub unavailable for a while (a restart, a leader election,
// the hub's database) is waited out, as the watch itself is, saying so
// once on stderr.
func (a *Commands) statusAt(ctx context.Context, mc *modelcmd.ModelConn, index uint64) (*api.FullStatus, error) {
	backoff, said := statusRetryMin, false
	for {
		fs, err := mc.Client.Model(mc.UUID).Status(ctx, api.ReadOptions{Index: index})
		if api.CodeOf(err) != api.CodeUnavailable || ctx.Err() != nil {
			if said && err == nil {
				fmt.Fprintln(a.Stderr, "Status available again.")
			}
			return fs, err
		}
		if !said {
			fmt.Fprintf(a.Stderr, "Status unavailable, retrying: %v\n", err)
			said = true
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, statusRetryMax)
	}
}

// The pause between status fetches a watch retries.
const (
	statusRetryMin = 250 * time.Millisecond
	statusRetryMax = 5 * time.Second
)

// lostModel explains a model refused (not found) after it was watched or
// followed: it was destroyed or the caller's access to it revoked, and a
// controller (or a hub) tells nobody which.
func lostModel(mc *modelcmd.ModelConn, how string, err error) error {
	if api.CodeOf(err) == api.CodeNotFound {
		return fmt.Errorf("model %q can no longer be %s: it was destroyed, or your access to it was revoked", mc.Model, how)
	}
	return err
}

// unitTag is "unit-app-N" for "app/N".
func unitTag(name string) string { return "unit-" + strings.ReplaceAll(name, "/", "-") }
