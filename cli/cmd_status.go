package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/spf13/cobra"
)

func (a *App) statusCmd() *cobra.Command {
	var mo modelOpt
	var format formatOpt
	var watch, color, noColor, relations bool
	cmd := &cobra.Command{
		Use:   "status [APPLICATION|UNIT|MACHINE...]",
		Short: "Show the model's applications, units, machines and integrations",
		Long: `Shows the status of the model as 'juju status' does: the Model line, then
App, Unit (the leader marked *, subordinates indented under their
principal), Machine and Integration sections. Arguments filter by
application, unit or machine name (globs allowed).

--format json and yaml print the same shape as 'juju status --format json'
(model, machines, applications → units → workload-status, juju-status,
open-ports, subordinates; relations), so scripts written for Juju keep
working. --watch redraws the status live from the model's event stream.
Colour is used on a terminal only, unless --color or --no-color.`,
		Example: `  drover status
  drover status kv web/0
  drover status --format json | jq '.applications.kv.units'
  drover status --watch`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			mc, err := a.dialModel(cmd.Context(), mo.ref)
			if err != nil {
				return err
			}
			defer mc.client.Close()
			opt := statusOptions{color: (a.Terminal || color) && !noColor, relations: relations}
			if watch {
				return a.watchStatus(cmd.Context(), mc, args, format.value, opt)
			}
			fs, err := mc.client.Status(cmd.Context(), mc.uuid)
			if err != nil {
				return err
			}
			return a.renderStatus(fs, args, format.value, opt, &bytes.Buffer{})
		},
	}
	mo.add(cmd)
	format.add(cmd, "tabular", "tabular", "json", "yaml")
	cmd.Flags().BoolVar(&watch, "watch", false, "redraw live as the model changes (Ctrl-C to stop)")
	cmd.Flags().BoolVar(&color, "color", false, "use ANSI colours even when not on a terminal")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "never use colours")
	cmd.Flags().BoolVar(&relations, "relations", false, "always show the Integration section")
	return cmd
}

// renderStatus writes one status through buf, so a redraw is one write.
func (a *App) renderStatus(fs *api.FullStatus, filters []string, format string, opt statusOptions, buf *bytes.Buffer) error {
	fs, err := filterStatus(fs, filters)
	if err != nil {
		return err
	}
	buf.Reset()
	if format == "tabular" {
		err = writeStatusTabular(buf, fs, opt)
	} else {
		err = writeFormatted(buf, format, fs)
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
func (a *App) watchStatus(ctx context.Context, mc *modelConn, filters []string, format string, opt statusOptions) error {
	w, err := a.follow(ctx, mc)
	if err != nil {
		return err
	}
	defer w.Close()
	var buf bytes.Buffer
	for {
		f, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C ends a watch normally
			}
			return err
		}
		fs := f.Status
		if f.Type != api.FrameReset || fs == nil {
			if fs, err = mc.client.Status(ctx, mc.uuid, api.ReadOptions{Index: f.Index}); err != nil {
				return err
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

func (a *App) debugLogCmd() *cobra.Command {
	var mo modelOpt
	var include, exclude []string
	var replay, noTail bool
	cmd := &cobra.Command{
		Use:   "debug-log",
		Short: "Stream the model's log",
		Long: `Streams the model's events as log lines, Juju style:
  unit-kv-0: 14:03:01 INFO workload active "ready"; agent idle
Hook output and juju-log lines are streamed once the unit agents send them
to the controller; until then debug-log shows every status, unit, machine,
relation and task change of the model, live from its event stream.
--replay starts with the current state of every entity; --no-tail prints
that and exits. --include/--exclude filter by entity (unit-kv-0, kv/0, kv).`,
		Example: "  drover debug-log\n  drover debug-log --include kv --replay\n  drover debug-log --replay --no-tail",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			mc, err := a.dialModel(cmd.Context(), mo.ref)
			if err != nil {
				return err
			}
			defer mc.client.Close()
			l := &logStream{a: a, include: splitList(include), exclude: splitList(exclude), last: map[string]string{}}
			return l.run(cmd.Context(), mc, replay || noTail, noTail)
		},
	}
	mo.add(cmd)
	cmd.Flags().StringArrayVar(&include, "include", nil, "only these entities (comma-separated or repeated)")
	cmd.Flags().StringArrayVar(&exclude, "exclude", nil, "not these entities")
	cmd.Flags().BoolVar(&replay, "replay", false, "start with the current state of every entity")
	cmd.Flags().BoolVar(&noTail, "no-tail", false, "print the current state and exit (implies --replay)")
	return cmd
}

// logStream turns watch frames into log lines, printing an entity's line
// only when it changed.
type logStream struct {
	a                *App
	include, exclude []string
	last             map[string]string // entity key → last message
}

func (l *logStream) run(ctx context.Context, mc *modelConn, replay, once bool) error {
	w, err := l.a.follow(ctx, mc)
	if err != nil {
		return err
	}
	defer w.Close()
	first := true
	for {
		f, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch {
		case f.Type == api.FrameReset && f.Status != nil:
			l.snapshot(f.Status, !first || replay)
		default:
			for _, d := range f.Deltas {
				l.delta(d)
			}
		}
		first = false
		if once {
			return nil
		}
	}
}

func (l *logStream) wanted(tag, name string) bool {
	matches := func(list []string) bool {
		for _, p := range list {
			if p == tag || p == name || strings.HasPrefix(name, p+"/") {
				return true
			}
		}
		return false
	}
	if len(l.include) > 0 && !matches(l.include) {
		return false
	}
	return !matches(l.exclude)
}

func (l *logStream) emit(key, tag, name, level, msg string, print bool) {
	if l.last[key] == msg {
		return
	}
	l.last[key] = msg
	if !print || !l.wanted(tag, name) {
		return
	}
	fmt.Fprintf(l.a.Stdout, "%s: %s %s %s\n", tag, l.a.Now().UTC().Format("15:04:05"), level, msg)
}

func levelOf(statuses ...string) string {
	for _, s := range statuses {
		switch s {
		case "error", "failed", "lost", "down":
			return "ERROR"
		case "blocked":
			return "WARNING"
		}
	}
	return "INFO"
}

func unitTag(name string) string { return "unit-" + strings.ReplaceAll(name, "/", "-") }

func statusText(s, msg string) string {
	if msg == "" {
		return s
	}
	return fmt.Sprintf("%s %q", s, msg)
}

func (l *logStream) unitLine(name string, w, wm, ag, am string, print bool) {
	msg := fmt.Sprintf("workload %s; agent %s", statusText(w, wm), statusText(ag, am))
	l.emit("unit/"+name, unitTag(name), name, levelOf(w, ag), msg, print)
}

// snapshot records (and with print, logs) every entity of a full status.
func (l *logStream) snapshot(fs *api.FullStatus, print bool) {
	for _, an := range sortedKeys(fs.Applications) {
		app := fs.Applications[an]
		l.emit("application/"+an, "application-"+an, an, levelOf(app.ApplicationStat.Current),
			"status "+statusText(app.ApplicationStat.Current, app.ApplicationStat.Message), print)
		for _, un := range sortedUnitNames(app.Units) {
			u := app.Units[un]
			l.unitLine(un, u.WorkloadStatus.Current, u.WorkloadStatus.Message, u.JujuStatus.Current, u.JujuStatus.Message, print)
			for _, sn := range sortedUnitNames(u.Subordinates) {
				s := u.Subordinates[sn]
				l.unitLine(sn, s.WorkloadStatus.Current, s.WorkloadStatus.Message, s.JujuStatus.Current, s.JujuStatus.Message, print)
			}
		}
	}
	for _, id := range sortedKeys(fs.Machines) {
		mc := fs.Machines[id]
		l.emit("machine/"+id, "machine-"+id, id, levelOf(mc.JujuStatus.Current),
			"status "+statusText(mc.JujuStatus.Current, mc.JujuStatus.Message), print)
	}
	for _, r := range fs.Relations {
		l.emit(fmt.Sprintf("relation/%d", r.ID), "model", "", "INFO",
			fmt.Sprintf("relation %d %s %s (%s) %s", r.ID, r.Provider, r.Requirer, r.Interface, r.Status), print)
	}
}

// decodeObject re-reads a delta's object as its API type.
func decodeObject(obj any, into any) bool {
	data, err := json.Marshal(obj)
	return err == nil && json.Unmarshal(data, into) == nil
}

func (l *logStream) delta(d api.WatchDelta) {
	key := d.Kind + "/" + d.Key
	if d.Op == "delete" {
		l.deleted(d)
		return
	}
	switch d.Kind {
	case "unit":
		var u api.Unit
		if decodeObject(d.Object, &u) {
			l.unitLine(u.Name, u.WorkloadStatus.Status, u.WorkloadStatus.Message, u.AgentStatus.Status, u.AgentStatus.Message, true)
		}
	case "application":
		var app api.Application
		if decodeObject(d.Object, &app) {
			msg := "status " + statusText(app.Status.Status, app.Status.Message)
			msg += fmt.Sprintf("; scale %d; charm %s rev %d", app.Scale, app.CharmName, app.CharmRevision)
			if app.Exposed {
				msg += "; exposed"
			}
			l.emit(key, "application-"+app.Name, app.Name, levelOf(app.Status.Status), msg, true)
		}
	case "machine":
		var m api.Machine
		if decodeObject(d.Object, &m) {
			l.emit("machine/"+m.ID, "machine-"+m.ID, m.ID, levelOf(m.AgentStatus.Status),
				"status "+statusText(m.AgentStatus.Status, m.AgentStatus.Message), true)
		}
	case "relation":
		var r api.Relation
		if decodeObject(d.Object, &r) {
			l.emit(fmt.Sprintf("relation/%d", r.ID), "model", "", "INFO", fmt.Sprintf("relation %d %s %s", r.ID, r.Key, r.Life), true)
		}
	case "task":
		var t api.Task
		if decodeObject(d.Object, &t) {
			msg := fmt.Sprintf("task %s: action %s %s", t.ID, t.Action, t.Status)
			if t.Message != "" {
				msg += ": " + t.Message
			}
			l.emit(key, unitTag(t.Receiver), t.Receiver, levelOf(t.Status), msg, true)
		}
	case "model":
		var m api.Model
		if decodeObject(d.Object, &m) {
			l.emit(key, "model", "", "INFO", fmt.Sprintf("model %s %s", m.Name, statusText(m.Status.Status, m.Status.Message)), true)
		}
	}
}

func (l *logStream) deleted(d api.WatchDelta) {
	tag, name := "model", ""
	switch d.Kind {
	case "unit":
		tag, name = unitTag(d.Key), d.Key
	case "application":
		tag, name = "application-"+d.Key, d.Key
	case "machine":
		tag, name = "machine-"+d.Key, d.Key
	}
	l.emit(d.Kind+"/"+d.Key, tag, name, "INFO", d.Kind+" "+d.Key+" removed", true)
}
