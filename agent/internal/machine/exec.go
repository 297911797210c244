package machine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/agent/internal/uniter"
	"github.com/droverhq/drover/api"
)

// maxExecOutput bounds the stdout and the stderr a machine command
// reports, each, as a unit's action output is bounded.
const maxExecOutput = 1 << 20

// errExecTimeout ends a machine command that outlived its timeout.
var errExecTimeout = errors.New("command timed out")

// errAgentRestarted fails a task the previous agent process was running
// when it stopped: whether the command finished is unknown.
const errAgentRestarted = "the machine agent restarted while the command ran"

// execConfig holds a machineExec's dependencies.
type execConfig struct {
	Machine string // the machine's ID, for the task reports
	// Dir is where commands run: the machine's directory.
	Dir    string
	Env    []string // the commands' environment: the machine's own
	Caller uniter.Caller
	// States returns the latest machine state and a channel closed when a
	// newer one arrives.
	States func() (*api.MachineState, <-chan struct{})
	Lock   uniter.Locker
	Logger *slog.Logger
	// Gate, if set, admits each command before it starts (the migration
	// fortress); a refused one is offered again with the next state.
	Gate uniter.Gate
}

// machineExec runs the machine's own tasks (juju exec --machine): each
// command with bash, outside any unit's hook context, as the agent's user
// (the machine's), in the machine's directory and environment.
//
// It reconciles against the machine state: a pending task it has not
// taken is started and run; a running task it did not start was the
// previous agent process's, and is reported failed, as a uniter reports
// an action its restart interrupted. A command stopped by the agent
// stopping is not reported, so the next agent reports it.
type machineExec struct {
	cfg execConfig
}

func newMachineExec(cfg execConfig) (*machineExec, error) {
	if cfg.Machine == "" || cfg.Dir == "" || cfg.Caller == nil || cfg.States == nil || cfg.Lock == nil || cfg.Logger == nil {
		return nil, errors.New("machine exec: Machine, Dir, Caller, States, Lock and Logger are required")
	}
	return &machineExec{cfg: cfg}, nil
}

// Run runs the machine's tasks until ctx ends; commands still running
// then are killed.
func (m *machineExec) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	taken := map[string]bool{} // tasks this process started or reported
	done := make(chan string)
	defer func() { _ = g.Wait() }()
	for {
		ms, changed := m.cfg.States()
		if ms != nil {
			present := map[string]bool{}
			for _, t := range ms.Tasks {
				present[t.ID] = true
				if taken[t.ID] || t.Action != api.ExecAction {
					continue
				}
				task := t
				if task.Status == api.TaskRunning {
					taken[t.ID] = true
					g.Go(func() error { return m.report(gctx, done, m.failed(task.ID, errAgentRestarted)) })
					continue
				}
				leave := func() {}
				if m.cfg.Gate != nil {
					var ok bool
					if leave, ok = m.cfg.Gate.Enter(); !ok {
						continue // the model migrates: held until the next state
					}
				}
				taken[t.ID] = true
				g.Go(func() error {
					defer leave()
					return m.run(gctx, done, task)
				})
			}
			for id := range taken {
				if !present[id] {
					delete(taken, id) // finished in the state: never offered again
				}
			}
		}
		select {
		case <-gctx.Done():
			return nil
		case <-changed:
		case <-done:
		}
	}
}

// run starts task, runs its command and reports the result.
func (m *machineExec) run(ctx context.Context, done chan<- string, task api.TaskRef) error {
	if err := m.cfg.Caller.Call(ctx, api.AgentStartTask, api.AgentTaskParams{Machine: m.cfg.Machine, ID: task.ID}, nil); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		// Cancelled or finished meanwhile, or the controller is away: the
		// task is reported by whoever sees it running next.
		m.cfg.Logger.Warn("cannot start machine task", "task", task.ID, "err", err)
		return m.report(ctx, done, m.failed(task.ID, "cannot start the task: "+err.Error()))
	}
	release := func() {}
	if lock := taskLock(task); lock != "" {
		var err error
		if release, err = m.cfg.Lock.Acquire(ctx, lock); err != nil {
			return nil // the agent stops
		}
	}
	res, err := m.execute(ctx, task)
	release()
	if ctx.Err() != nil {
		return nil // the restarted agent reports it failed
	}
	return m.report(ctx, done, m.result(task.ID, res, err))
}

// taskLock is the lock a machine task runs under: none for a parallel
// task (juju exec's default), its execution group's, or the machine's.
func taskLock(task api.TaskRef) string {
	switch {
	case task.ExecutionGroup != "":
		return "exec-command-" + task.ExecutionGroup
	case task.Parallel:
		return ""
	}
	return "machine"
}

// execOutput is a finished command.
type execOutput struct {
	code           int
	stdout, stderr string
}

// execute runs task's command with bash in the machine's directory and
// environment, bounded by its timeout parameter.
func (m *machineExec) execute(ctx context.Context, task api.TaskRef) (execOutput, error) {
	script, _ := task.Params["command"].(string)
	if script == "" {
		return execOutput{}, errors.New("juju-exec without a command")
	}
	if t, _ := task.Params["timeout"].(string); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return execOutput{}, fmt.Errorf("juju-exec timeout %q: want a positive duration", t)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, fmt.Errorf("%w after %s", errExecTimeout, t))
		defer cancel()
	}
	cmd := exec.Command("/bin/bash", "-c", script)
	cmd.Dir, cmd.Env = m.cfg.Dir, m.cfg.Env
	// Its own process group, so the whole command can be killed; and
	// killed with the agent, so it never outlives the agent that runs it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Daemons the command starts may keep its output open: stop waiting
	// for them shortly after the command itself has exited.
	cmd.WaitDelay = time.Second
	stdout, stderr := &capped{max: maxExecOutput}, &capped{max: maxExecOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return execOutput{}, err
	}
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	werr := cmd.Wait()
	out := execOutput{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if cause := context.Cause(ctx); errors.Is(cause, errExecTimeout) {
		return out, cause
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	var exitErr *exec.ExitError
	if werr != nil && !errors.As(werr, &exitErr) && !errors.Is(werr, exec.ErrWaitDelay) {
		return out, werr
	}
	return out, nil
}

// result is the finish-task report of a command that ended with out and
// err, as a unit's juju-exec reports it.
func (m *machineExec) result(id string, out execOutput, err error) api.AgentTaskParams {
	if err != nil {
		return m.failed(id, err.Error())
	}
	p := api.AgentTaskParams{Machine: m.cfg.Machine, ID: id, Status: api.TaskCompleted,
		Results: map[string]any{"return-code": out.code}}
	uniter.OutputResult(p.Results, "stdout", out.stdout)
	uniter.OutputResult(p.Results, "stderr", out.stderr)
	if out.code != 0 {
		p.Status, p.Message = api.TaskFailed, "exit status "+strconv.Itoa(out.code)
	}
	return p
}

func (m *machineExec) failed(id, message string) api.AgentTaskParams {
	return api.AgentTaskParams{Machine: m.cfg.Machine, ID: id, Status: api.TaskFailed, Message: message}
}

// report sends a finish-task report, retrying for about a minute (a
// failover is brief; the results exist only here); a task the controller
// has already finished or forgotten counts as reported. Then it wakes Run.
func (m *machineExec) report(ctx context.Context, done chan<- string, p api.AgentTaskParams) error {
	for attempt := 0; ; attempt++ {
		err := m.cfg.Caller.Call(ctx, api.AgentFinishTask, p, nil)
		if err == nil || errors.Is(err, api.ErrConflict) || errors.Is(err, api.ErrNotFound) {
			break
		}
		if attempt >= 60 {
			m.cfg.Logger.Error("cannot report machine task", "task", p.ID, "err", err)
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	select {
	case done <- p.ID:
	case <-ctx.Done():
	}
	return nil
}

// capped keeps the first max bytes written to it and discards the rest.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }
