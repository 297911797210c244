package uniter

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/droverhq/drover/agent/internal/hookctx"
	"github.com/droverhq/drover/api"
)

// errExecTimeout ends a juju-exec command that outlived its timeout.
var errExecTimeout = errors.New("command timed out")

// execResult is a finished hook or action process with its context.
type execResult struct {
	res       result
	changes   hookctx.Changes
	outcome   hookctx.ActionOutcome
	remote    *hookRemote
	baseState map[string]string
	reboot    hookctx.RebootRequest // what juju-reboot asked
}

// execute runs one hook (h) or action (task) process in a fresh hook
// context served on the unit's tool socket.
func (u *Uniter) execute(ctx context.Context, h *HookInfo, task *api.TaskRef, ms *api.MachineState) (*execResult, error) {
	urs := ms.Units[u.cfg.Unit]
	ci := u.charm()
	hr := &hookRemote{u: u, endpoints: ci.bindings, address: u.address()}
	state := map[string]string{}
	if err := u.cfg.Caller.Call(ctx, api.AgentCharmState, api.AgentUnitParams{Unit: u.cfg.Unit}, &state); err != nil {
		return &execResult{}, err
	}
	hcfg := hookctx.Config{Unit: u.cfg.Unit, ModelName: ms.ModelName, ModelUUID: ms.ModelUUID,
		Charm: ci.config, Settings: typedSettings(ci.config, urs.Config), OpenedPorts: urs.OpenPorts, State: state,
		PrivateAddress: hr.address, PublicAddress: hr.address, Remote: hr, Now: u.cfg.Now,
		Log: func(level, module, message string) { u.logRemote(ctx, level, module, message) }}
	// `juju-reboot --now` ends the hook at once: its process group is
	// killed before the tool answers, and the hook counts as killed.
	runCtx, endHook := context.WithCancel(ctx)
	defer endHook()
	ex := &execution{}
	hcfg.CanReboot = u.cfg.Reboot != nil && task == nil
	hcfg.RebootNow = func() { ex.kill(); endHook() }
	var name, dispatch string
	if h != nil {
		name, dispatch = hookTarget(&hcfg, h)
	} else {
		cmd, err := parseExecCommand(task)
		if err != nil {
			return &execResult{}, err
		}
		if cmd.timeout > 0 {
			var cancel context.CancelFunc
			runCtx, cancel = context.WithTimeoutCause(runCtx, cmd.timeout, cmd.timeoutCause)
			defer cancel()
		}
		ex.script = cmd.script
		name, dispatch = taskTarget(&hcfg, hr, task)
	}
	hcfg.Relations = u.contextRelations(urs, h)
	hc, err := hookctx.New(hcfg)
	if err != nil {
		return &execResult{}, err
	}
	id := newContextID(u.cfg.Unit, strings.ReplaceAll(name, "/", "-"))
	deactivate := u.tools.Activate(id, hc)
	ex.charmDir, ex.dispatchPath, ex.env = u.charmDir(), dispatch, u.environ(id, dispatch, h, task, ms)
	ex.capture = task != nil
	module := "unit." + u.cfg.Unit + "." + name
	ex.logLine = func(isErr bool, line string) {
		level := "DEBUG"
		if isErr {
			level = "WARNING"
		}
		u.logRemote(ctx, level, module, line)
	}
	res, err := runProcess(runCtx, ex, h, ci)
	deactivate()
	out := &execResult{res: res, remote: hr, baseState: state, outcome: hc.Action().Outcome(), reboot: hc.Reboot()}
	if err == nil && res.code == 0 {
		out.changes = hc.Flush()
	}
	return out, err
}

// hookTarget fills the hook context of hook h and returns the hook's name
// and dispatch path.
func hookTarget(hcfg *hookctx.Config, h *HookInfo) (name, dispatch string) {
	name = h.Name()
	hcfg.Hook = name
	if h.IsRelation() {
		hcfg.Relation = &hookctx.HookRelation{ID: h.RelationID, RemoteUnit: h.RemoteUnit, RemoteApp: h.RemoteApp}
		if h.Kind == HookRelationDeparted {
			hcfg.Relation.DepartingUnit = h.DepartingUnit
		}
	}
	return name, "hooks/" + name
}

// taskTarget fills the hook context of a task and returns the task's name
// and dispatch path.
func taskTarget(hcfg *hookctx.Config, hr *hookRemote, task *api.TaskRef) (name, dispatch string) {
	dispatch = "actions/" + task.Action
	if task.Action == api.ExecAction {
		// juju exec: the command, in the unit's hook context, with no
		// hook or dispatch path (CHARM-CONTRACT §4.1).
		dispatch = ""
	}
	hr.taskID = task.ID
	hcfg.Action = &hookctx.Action{Name: task.Action, ID: task.ID, Params: task.Params}
	if hcfg.Action.Params == nil {
		hcfg.Action.Params = map[string]any{}
	}
	return task.Action, dispatch
}

// execCommand is juju exec's command line and its optional time limit.
type execCommand struct {
	script       string
	timeout      time.Duration // 0 for none
	timeoutCause error         // what the process ends with when timeout passes
}

// parseExecCommand reads juju exec's parameters; any other task has none
// and gets the zero execCommand.
func parseExecCommand(task *api.TaskRef) (execCommand, error) {
	if task.Action != api.ExecAction {
		return execCommand{}, nil
	}
	var cmd execCommand
	cmd.script, _ = task.Params["command"].(string)
	if cmd.script == "" {
		return execCommand{}, errors.New("juju-exec without a command")
	}
	if t, _ := task.Params["timeout"].(string); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return execCommand{}, fmt.Errorf("juju-exec timeout %q: want a positive duration", t)
		}
		cmd.timeout, cmd.timeoutCause = d, fmt.Errorf("%w after %s", errExecTimeout, t)
	}
	return cmd, nil
}

// runProcess runs the prepared process under runCtx.
func runProcess(runCtx context.Context, ex *execution, h *HookInfo, ci *charmInfo) (result, error) {
	if h != nil && h.IsRelation() && !ci.declared[h.Endpoint] {
		// The implicit juju-info endpoint never runs hooks (CHARM-CONTRACT
		// §1.2); its scope and members are still tracked.
		return result{missing: true}, nil
	}
	res, err := ex.run(runCtx)
	if cause := context.Cause(runCtx); errors.Is(cause, errExecTimeout) {
		err = cause // the command's own limit, not the agent stopping
	}
	return res, err
}

// contextRelations are the relations the hook can see: created and not yet
// broken, plus the hook's own relation.
func (u *Uniter) contextRelations(urs *api.UnitRemoteState, h *HookInfo) []hookctx.Relation {
	var out []hookctx.Relation
	for id, rl := range u.local.Relations {
		own := h != nil && h.IsRelation() && h.RelationID == id
		if !rl.Created && !own {
			continue
		}
		life := api.Dead
		if rr := urs.Relations[id]; rr != nil {
			life = rr.Life
		}
		if life == api.Dead && h != nil && h.Kind == HookRelationBroken && own {
			life = api.Dying // still listed while its broken hook runs
		}
		members := slices.Sorted(keys(rl.Members))
		out = append(out, hookctx.Relation{ID: id, Endpoint: rl.Endpoint, RemoteApp: rl.RemoteApp, Members: members, Life: life})
	}
	slices.SortFunc(out, func(a, b hookctx.Relation) int { return a.ID - b.ID })
	return out
}

// environ is the hook environment of CHARM-CONTRACT §4: built from scratch,
// not inherited from the agent.
func (u *Uniter) environ(contextID, dispatch string, h *HookInfo, task *api.TaskRef, ms *api.MachineState) []string {
	urs := ms.Units[u.cfg.Unit]
	charmDir := u.charmDir()
	hookName := ""
	if h != nil {
		hookName = h.Name()
	}
	env := []string{
		"JUJU_CHARM_DIR=" + charmDir,
		"CHARM_DIR=" + charmDir,
		"JUJU_CONTEXT_ID=" + contextID,
		"JUJU_HOOK_NAME=" + hookName,
		"JUJU_AGENT_SOCKET_ADDRESS=" + u.cfg.SocketAddress,
		"JUJU_AGENT_SOCKET_NETWORK=unix",
		"JUJU_UNIT_NAME=" + u.cfg.Unit,
		"JUJU_MODEL_UUID=" + ms.ModelUUID,
		"JUJU_MODEL_NAME=" + ms.ModelName,
		"JUJU_API_ADDRESSES=" + strings.Join(u.cfg.APIAddresses(), " "),
		"JUJU_MACHINE_ID=" + ms.Machine,
		"JUJU_PRINCIPAL_UNIT=" + urs.Principal,
		"JUJU_AVAILABILITY_ZONE=",
		"JUJU_VERSION=" + JujuVersion,
		"CLOUD_API_VERSION=",
		"JUJU_CHARM_HTTP_PROXY=",
		"JUJU_CHARM_HTTPS_PROXY=",
		"JUJU_CHARM_FTP_PROXY=",
		"JUJU_CHARM_NO_PROXY=",
		"PATH=" + u.cfg.ToolsDir + ":" + os.Getenv("PATH"),
		"APT_LISTCHANGES_FRONTEND=none",
		"DEBIAN_FRONTEND=noninteractive",
		"LANG=C.UTF-8",
		"TERM=tmux-256color",
	}
	if dispatch != "" { // juju exec has none
		env = append(env, "JUJU_DISPATCH_PATH="+dispatch)
	}
	if h != nil && h.IsRelation() {
		env = append(env,
			"JUJU_RELATION="+h.Endpoint,
			"JUJU_RELATION_ID="+h.Endpoint+":"+strconv.Itoa(h.RelationID),
			"JUJU_REMOTE_APP="+h.RemoteApp,
			"JUJU_REMOTE_UNIT="+h.RemoteUnit)
		if h.Kind == HookRelationDeparted {
			env = append(env, "JUJU_DEPARTING_UNIT="+h.DepartingUnit)
		}
	}
	if task != nil && task.Action != api.ExecAction {
		env = append(env, "JUJU_ACTION_NAME="+task.Action, "JUJU_ACTION_UUID="+task.ID, "JUJU_ACTION_TAG=action-"+task.ID)
	}
	return env
}

// runAction runs one task: start-task, the process (under the machine
// lock unless parallel; under its execution group's lock if it has one),
// any buffered changes, finish-task. A failing action fails its task only.
func (u *Uniter) runAction(ctx context.Context, op *Operation, ms *api.MachineState) error {
	task := findTask(ms.Units[u.cfg.Unit], op.TaskID)
	if task == nil {
		return nil
	}
	if err := u.startAction(ctx, task); err != nil {
		return err
	}
	release := func() {}
	if lock := taskLock(task); lock != "" {
		var err error
		if release, err = u.cfg.Lock.Acquire(ctx, lock); err != nil {
			return err
		}
	}
	u.setAgentStatus(ctx, api.Status{Status: "executing", Message: "running action " + task.Action})
	ex, err := u.execute(ctx, nil, task, ms)
	release()
	if ctx.Err() != nil {
		return ctx.Err() // the restarted agent reports it failed
	}
	p := taskResult(u.cfg.Unit, task, ex, err)
	if ex.res.code == 0 && err == nil && !ex.changes.Empty() {
		if cerr := u.cfg.Caller.Call(ctx, api.AgentCommitHook, wireChanges(u.cfg.Unit, ex.changes, ex.baseState), nil); cerr != nil {
			p.Status, p.Message = api.TaskFailed, "committing requested changes failed"
		}
	}
	if err := u.finishTask(ctx, p); err != nil {
		return err // Pending: recovery reports the task failed
	}
	u.local.addCompleted(task.ID)
	u.local.Op = u.local.Op.afterAction()
	return u.save()
}

// findTask returns a copy of the unit's task id, or nil: the state may be
// replaced while the task runs.
func findTask(urs *api.UnitRemoteState, id string) *api.TaskRef {
	var task *api.TaskRef
	for i := range urs.Tasks {
		if urs.Tasks[i].ID == id {
			t := urs.Tasks[i]
			task = &t
		}
	}
	return task
}

// startAction tells the controller the task runs, then records it as the
// Pending operation, in front of any failed or queued hook it interrupts.
func (u *Uniter) startAction(ctx context.Context, task *api.TaskRef) error {
	if task.Status == api.TaskPending {
		if err := u.cfg.Caller.Call(ctx, api.AgentStartTask, api.AgentTaskParams{Unit: u.cfg.Unit, ID: task.ID}, nil); err != nil {
			return err
		}
	}
	next := Operation{Kind: OpRunAction, Step: Pending, TaskID: task.ID}
	if cur := u.local.Op; cur.Kind == OpRunHook && cur.Hook != nil {
		next.Resume = &cur // a failed or queued hook the action runs in front of
	}
	u.local.Op = next
	return u.save()
}

// taskLock is the lock a task runs under: its execution group's, none
// ("") for a parallel task, the machine lock otherwise.
func taskLock(task *api.TaskRef) string {
	switch {
	case task.ExecutionGroup != "":
		return "exec-command-" + task.ExecutionGroup
	case task.Parallel:
		return ""
	}
	return "machine"
}

// taskResult is unit's finish-task report of a task whose process ended
// with ex and err.
func taskResult(unit string, task *api.TaskRef, ex *execResult, err error) api.AgentTaskParams {
	p := api.AgentTaskParams{Unit: unit, ID: task.ID, Status: api.TaskCompleted, Results: ex.outcome.Results}
	if p.Results == nil {
		p.Results = map[string]any{}
	}
	switch {
	case err != nil:
		p.Status, p.Message = api.TaskFailed, err.Error()
	case ex.res.missing:
		p.Status, p.Message = api.TaskFailed, "action not implemented on unit \""+unit+"\""
	default:
		p.Results["return-code"] = ex.res.code
		OutputResult(p.Results, "stdout", ex.res.stdout)
		OutputResult(p.Results, "stderr", ex.res.stderr)
		if ex.outcome.Failed {
			p.Status, p.Message = api.TaskFailed, ex.outcome.Message
		} else if ex.res.code != 0 {
			p.Status, p.Message = api.TaskFailed, "exit status "+strconv.Itoa(ex.res.code)
		}
	}
	return p
}

// finishTask reports a task's result. The results exist only here, so it
// keeps trying for about a minute (a failover is brief); a task the
// controller has already finished or forgotten counts as reported.
func (u *Uniter) finishTask(ctx context.Context, p api.AgentTaskParams) error {
	for attempt := 0; ; attempt++ {
		err := u.cfg.Caller.Call(ctx, api.AgentFinishTask, p, nil)
		if err == nil || errors.Is(err, api.ErrConflict) || errors.Is(err, api.ErrNotFound) {
			return nil
		}
		if attempt >= 60 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// OutputResult records a task's output under key, as Juju does: text as
// it is, and output that is not UTF-8 (JSON would mangle it) in base64,
// said by "<key>-encoding": "base64".
func OutputResult(results map[string]any, key, out string) {
	switch {
	case out == "":
	case utf8.ValidString(out):
		results[key] = out
	default:
		results[key] = base64.StdEncoding.EncodeToString([]byte(out))
		results[key+"-encoding"] = "base64"
	}
}
