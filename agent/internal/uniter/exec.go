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
	name, dispatch := "", ""
	if h != nil {
		name = h.Name()
		dispatch = "hooks/" + name
		hcfg.Hook = name
		if h.IsRelation() {
			hcfg.Relation = &hookctx.HookRelation{ID: h.RelationID, RemoteUnit: h.RemoteUnit, RemoteApp: h.RemoteApp}
			if h.Kind == HookRelationDeparted {
				hcfg.Relation.DepartingUnit = h.DepartingUnit
			}
		}
	} else {
		name = task.Action
		dispatch = "actions/" + task.Action
		if task.Action == api.ExecAction {
			// juju exec: the command, in the unit's hook context, with no
			// hook or dispatch path (CHARM-CONTRACT §4.1).
			dispatch = ""
			ex.script, _ = task.Params["command"].(string)
			if ex.script == "" {
				return &execResult{}, errors.New("juju-exec without a command")
			}
			if t, _ := task.Params["timeout"].(string); t != "" {
				d, err := time.ParseDuration(t)
				if err != nil || d <= 0 {
					return &execResult{}, fmt.Errorf("juju-exec timeout %q: want a positive duration", t)
				}
				var cancel context.CancelFunc
				runCtx, cancel = context.WithTimeoutCause(runCtx, d, fmt.Errorf("%w after %s", errExecTimeout, t))
				defer cancel()
			}
		}
		hr.taskID = task.ID
		hcfg.Action = &hookctx.Action{Name: task.Action, ID: task.ID, Params: task.Params}
		if hcfg.Action.Params == nil {
			hcfg.Action.Params = map[string]any{}
		}
	}
	hcfg.Relations = u.contextRelations(urs, h)
	hc, err := hookctx.New(hcfg)
	if err != nil {
		return &execResult{}, err
	}
	id := newContextID(u.cfg.Unit, strings.ReplaceAll(name, "/", "-"))
	deactivate := u.tools.Activate(id, hc)
	module := "unit." + u.cfg.Unit + "." + name
	ex.charmDir, ex.dispatchPath, ex.env = u.charmDir(), dispatch, u.environ(id, dispatch, h, task, ms)
	ex.capture = task != nil
	ex.logLine = func(isErr bool, line string) {
		level := "DEBUG"
		if isErr {
			level = "WARNING"
		}
		u.logRemote(ctx, level, module, line)
	}
	var res result
	if h != nil && h.IsRelation() && !ci.declared[h.Endpoint] {
		// The implicit juju-info endpoint never runs hooks (CHARM-CONTRACT
		// §1.2); its scope and members are still tracked.
		res.missing = true
	} else {
		res, err = ex.run(runCtx)
		if cause := context.Cause(runCtx); errors.Is(cause, errExecTimeout) {
			err = cause // the command's own limit, not the agent stopping
		}
	}
	deactivate()
	out := &execResult{res: res, remote: hr, baseState: state, outcome: hc.Action().Outcome(), reboot: hc.Reboot()}
	if err == nil && res.code == 0 {
		out.changes = hc.Flush()
	}
	return out, err
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
	urs := ms.Units[u.cfg.Unit]
	var task *api.TaskRef
	for i := range urs.Tasks {
		if urs.Tasks[i].ID == op.TaskID {
			t := urs.Tasks[i] // a copy: the state may be replaced meanwhile
			task = &t
		}
	}
	if task == nil {
		return nil
	}
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
	if err := u.save(); err != nil {
		return err
	}
	lock := "machine"
	switch {
	case task.ExecutionGroup != "":
		lock = "exec-command-" + task.ExecutionGroup
	case task.Parallel:
		lock = ""
	}
	release := func() {}
	if lock != "" {
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
	p := api.AgentTaskParams{Unit: u.cfg.Unit, ID: task.ID, Status: api.TaskCompleted, Results: ex.outcome.Results}
	if p.Results == nil {
		p.Results = map[string]any{}
	}
	switch {
	case err != nil:
		p.Status, p.Message = api.TaskFailed, err.Error()
	case ex.res.missing:
		p.Status, p.Message = api.TaskFailed, "action not implemented on unit \""+u.cfg.Unit+"\""
	default:
		p.Results["return-code"] = ex.res.code
		outputResult(p.Results, "stdout", ex.res.stdout)
		outputResult(p.Results, "stderr", ex.res.stderr)
		if ex.outcome.Failed {
			p.Status, p.Message = api.TaskFailed, ex.outcome.Message
		} else if ex.res.code != 0 {
			p.Status, p.Message = api.TaskFailed, "exit status "+strconv.Itoa(ex.res.code)
		}
	}
	if ex.res.code == 0 && err == nil && !ex.changes.Empty() {
		if cerr := u.cfg.Caller.Call(ctx, api.AgentCommitHook, wireChanges(u.cfg.Unit, ex.changes, ex.baseState), nil); cerr != nil {
			p.Status, p.Message = api.TaskFailed, "committing requested changes failed"
		}
	}
	// The results exist only here: keep trying (a failover is brief).
	for attempt := 0; ; attempt++ {
		err := u.cfg.Caller.Call(ctx, api.AgentFinishTask, p, nil)
		if err == nil || errors.Is(err, api.ErrConflict) || errors.Is(err, api.ErrNotFound) {
			break
		}
		if attempt >= 60 {
			return err // Pending: recovery reports the task failed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	u.local.addCompleted(task.ID)
	u.local.Op = u.local.Op.afterAction()
	return u.save()
}

// outputResult records a task's output under key, as Juju does: text as
// it is, and output that is not UTF-8 (JSON would mangle it) in base64,
// said by "<key>-encoding": "base64".
func outputResult(results map[string]any, key, out string) {
	switch {
	case out == "":
	case utf8.ValidString(out):
		results[key] = out
	default:
		results[key] = base64.StdEncoding.EncodeToString([]byte(out))
		results[key+"-encoding"] = "base64"
	}
}
