package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// debugLogOptions are debug-log's flags once checked.
type debugLogOptions struct {
	filter logFilter
	format logFormat
	replay bool
	noTail bool
	lines  int
	limit  int
}

// DebugLogCmd is 'drover debug-log'.
func (a *Commands) DebugLogCmd() *cobra.Command {
	return a.debugLogCmd(func(ctx context.Context, ref string, o debugLogOptions) error {
		return a.WithModel(ctx, ref, func(mc *modelcmd.ModelConn) error {
			err := a.streamLogs(ctx, mc, o)
			if errors.Is(err, api.ErrLogsUnsupported) {
				return fmt.Errorf("controller %q has no debug-log stream (it is older than this client); upgrade it, "+
					"or follow changes with 'drover status --watch' and 'drover show-status-log UNIT'", mc.Name)
			}
			return err
		})
	})
}

// debugLogCmd is debug-log's command line: run gets the model reference
// and the checked options.
func (a *Commands) debugLogCmd(run func(ctx context.Context, ref string, o debugLogOptions) error) *cobra.Command {
	var mo modelcmd.ModelOpt
	var lf debugLogFlags
	o := debugLogOptions{}
	cmd := &cobra.Command{
		Use:   "debug-log",
		Short: "Stream the model's log: juju-log lines and hook output of its agents",
		Long: `Streams the log lines the model's agents send to the controller: what hooks
write with juju-log, hook output, and agent messages such as failed hooks.
Lines look like Juju's:
  unit-kv-0: 12:01:02 INFO unit.kv/0.juju-log Hello

By default the last --lines (10) lines are shown, then new lines as they
arrive; --replay starts with every line the controller keeps instead, and
--no-tail prints and exits instead of following. --limit N prints the N
most recent lines and exits.

--include and --exclude take entities: a unit (kv/0 or unit-kv-0), an
application (kv: all its units), a machine (0 or machine-0); globs such as
'kv/*' work. --include-module and --exclude-module take logger modules
(unit.kv/0.juju-log; a prefix such as 'juju.worker' includes its children).
--level shows that level and above.

Logs are kept in memory by the controller node an agent is connected to,
the last 5000 lines per model: with several controller nodes, debug-log
shows the lines of the node it is connected to.`,
		Example: `  drover debug-log
  drover debug-log --include kv/0 --level WARNING
  drover debug-log --replay --no-tail --include kv --include-module unit.kv/0.juju-log
  drover debug-log -n 100 --exclude machine-0`,
		Args: modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lf.apply(&o, a.Terminal, cmd.Flags().Changed("lines")); err != nil {
				return err
			}
			return run(cmd.Context(), mo.Ref, o)
		},
	}
	mo.Add(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&lf.include, "include", nil, "only these entities: kv/0, kv, 0, unit-kv-0, globs (comma-separated or repeated)")
	f.StringArrayVar(&lf.exclude, "exclude", nil, "not these entities")
	f.StringArrayVar(&lf.includeModule, "include-module", nil, "only these logger modules and their children")
	f.StringArrayVar(&lf.excludeModule, "exclude-module", nil, "not these logger modules")
	f.StringVarP(&lf.level, "level", "l", "", "show this level and above: TRACE, DEBUG, INFO, WARNING, ERROR")
	f.BoolVar(&o.replay, "replay", false, "start with every line the controller keeps")
	f.IntVarP(&o.lines, "lines", "n", 10, "start with this many of the most recent lines")
	f.BoolVar(&o.noTail, "no-tail", false, "print the lines kept so far and exit")
	f.IntVar(&o.limit, "limit", 0, "print this many of the most recent lines and exit (0: no limit)")
	f.BoolVar(&lf.color, "color", false, "use ANSI colours even when not on a terminal")
	f.BoolVar(&lf.noColor, "no-color", false, "never use colours")
	f.BoolVar(&lf.utc, "utc", false, "show times in UTC")
	f.BoolVar(&lf.date, "date", false, "show dates as well as times")
	return cmd
}

// debugLogFlags are the flags debug-log turns into its filter and format.
type debugLogFlags struct {
	include, exclude, includeModule, excludeModule []string
	level                                          string
	color, noColor, utc, date                      bool
}

// apply checks the flags and sets o's filter and format from them;
// linesGiven is whether --lines was on the command line.
func (lf *debugLogFlags) apply(o *debugLogOptions, terminal, linesGiven bool) error {
	if lf.level != "" {
		l, err := parseLevel(lf.level)
		if err != nil {
			return err
		}
		o.filter.level = l
	}
	if o.lines < 0 || o.limit < 0 {
		return modelcmd.Usagef("--lines and --limit must not be negative")
	}
	if o.replay && linesGiven {
		return modelcmd.Usagef("--replay shows every line; it does not combine with --lines")
	}
	if o.limit > 0 {
		// Juju's --limit: the most recent lines (at most --lines of them
		// when that is given too), then exit.
		if !linesGiven || o.lines > o.limit {
			o.lines = o.limit
		}
		o.replay, o.noTail = false, true
	}
	o.filter.include = entityPatterns(modelcmd.SplitList(lf.include))
	o.filter.exclude = entityPatterns(modelcmd.SplitList(lf.exclude))
	o.filter.includeModule = modelcmd.SplitList(lf.includeModule)
	o.filter.excludeModule = modelcmd.SplitList(lf.excludeModule)
	o.format = logFormat{loc: time.Local, color: (terminal || lf.color) && !lf.noColor, date: lf.date}
	if lf.utc {
		o.format.loc = time.UTC
	}
	return nil
}

// streamLogs prints the model's log: without --replay the last --lines
// matching lines first, then (unless --no-tail) new lines as they come.
func (a *Commands) streamLogs(ctx context.Context, mc *modelcmd.ModelConn, o debugLogOptions) error {
	printed := 0
	emit := func(r *api.LogRecord) (bool, error) {
		if err := o.format.write(a.Stdout, r); err != nil {
			return false, err
		}
		printed++
		return o.limit > 0 && printed >= o.limit, nil
	}
	var since uint64
	if !o.replay {
		tail, seq, err := a.logTail(ctx, mc, o.filter, o.lines)
		if err != nil {
			return err
		}
		for i := range tail {
			if done, err := emit(&tail[i]); done || err != nil {
				return err
			}
		}
		if o.noTail {
			return nil
		}
		since = seq
	}
	s, err := mc.Client.Model(mc.UUID).Logs(ctx, api.LogsRequest{Since: since, Follow: !o.noTail})
	if err != nil {
		return err
	}
	defer s.Close()
	s.OnOutage(a.SayOutage("Log stream", mc))
	for {
		r, err := s.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && ctx.Err() != nil:
			return nil // Ctrl-C ends a follow normally
		case err != nil:
			return lostModel(mc, "followed", err)
		}
		if !o.filter.wanted(r) {
			continue
		}
		if done, err := emit(r); done || err != nil {
			return err
		}
	}
}

// logTail reads the lines kept now and returns the last n that match, and
// the sequence number to follow on from.
func (a *Commands) logTail(ctx context.Context, mc *modelcmd.ModelConn, f logFilter, n int) ([]api.LogRecord, uint64, error) {
	s, err := mc.Client.Model(mc.UUID).Logs(ctx, api.LogsRequest{})
	if err != nil {
		return nil, 0, err
	}
	defer s.Close()
	var tail []api.LogRecord
	for {
		r, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			return tail, s.Seq(), nil
		}
		if err != nil {
			return nil, 0, err
		}
		if n > 0 && f.wanted(r) {
			if len(tail) == n {
				tail = append(tail[:0], tail[1:]...)
			}
			tail = append(tail, *r)
		}
	}
}
