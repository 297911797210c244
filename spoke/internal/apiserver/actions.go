package apiserver

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/hubtrust"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// runAction validates params against each receiver's charm action schema
// (filling defaults) and enqueues one task per receiver. "app/leader"
// names the application's current leader, as in `juju run app/leader`.
func (s *actionEndpoint) runAction(w http.ResponseWriter, r *http.Request) {
	var req api.RunActionRequest
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if len(req.Receivers) == 0 || req.Action == "" {
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "receivers and action are required"))
		return
	}
	model := modelOf(r)
	if req.Action == api.ExecAction {
		if err := checkExec(callerOf(r.Context()), req.Params); err != nil {
			reply.WriteError(w, r, err)
			return
		}
	}
	jobs, err := s.actionJobs(s.b.Store().Snapshot(), model, &req)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	var tasks []api.Task
	var last uint64
	operation := ""
	for _, j := range jobs {
		var t api.Task
		idx, err := s.propose(r, state.EnqueueTaskType, &state.EnqueueTaskRequest{
			ModelUUID: model, Receiver: j.unit, Machine: j.machine, Action: req.Action, Params: j.params,
			Parallel: j.par, ExecutionGroup: j.group, Operation: operation, Now: s.now(),
		}, &t)
		if err != nil {
			reply.WriteError(w, r, err)
			return
		}
		tasks, last = append(tasks, t), idx
		operation = tasks[0].ID // the request's tasks are one operation
	}
	reply.Indexed(w, http.StatusCreated, last, tasks)
}

// actionJob is one task an action request enqueues: on a unit, or (exec
// only) on a machine.
type actionJob struct {
	unit    string
	machine string
	params  map[string]any
	par     bool
	group   string
}

// actionJobs resolves an action request's receivers to units and machines
// and checks the action and its params against each unit's charm, all
// before any task is enqueued.
func (s *actionEndpoint) actionJobs(snap *state.Snapshot, model string, req *api.RunActionRequest) ([]actionJob, error) {
	exec := req.Action == api.ExecAction
	var jobs []actionJob
	for _, recv := range req.Receivers {
		if id, ok := api.ReceiverMachine(recv); ok {
			if !exec {
				return nil, api.Errorf(api.CodeInvalid, "action %q cannot run on machine %s: only %s runs on a machine", req.Action, id, api.ExecAction)
			}
			mc, err := lookup.Machine(snap, model, id)
			if err != nil {
				return nil, err
			}
			if mc.Life == api.Dead {
				return nil, api.Errorf(api.CodeConflict, "machine %q is dead", id)
			}
			// In parallel, as juju exec --machine's default --parallel.
			jobs = append(jobs, actionJob{machine: id, params: req.Params, par: true})
			continue
		}
		unit, err := s.resolveReceiver(snap, model, recv)
		if err != nil {
			return nil, err
		}
		u, err := lookup.Unit(snap, model, unit)
		if err != nil {
			return nil, err
		}
		app, err := lookup.Application(snap, model, u.Application)
		if err != nil {
			return nil, err
		}
		if exec {
			// Without the machine lock, as juju exec's default --parallel.
			jobs = append(jobs, actionJob{unit: unit, params: req.Params, par: true})
			continue
		}
		_, p, err := s.charms.charmOf(snap, app.CharmSHA256)
		if err != nil {
			return nil, err
		}
		spec, ok := p.actions.Spec(req.Action)
		if !ok {
			return nil, api.Errorf(api.CodeNotFound, "action %q not defined on application %q (its actions: %s)",
				req.Action, app.Name, strings.Join(p.actions.Names(), ", "))
		}
		params, err := p.actions.Validate(req.Action, numbersToGo(req.Params))
		if err != nil {
			return nil, api.Errorf(api.CodeInvalid, "%v", err)
		}
		jobs = append(jobs, actionJob{unit: unit, params: params, par: spec.Parallel, group: spec.ExecutionGroup})
	}
	return jobs, nil
}

// checkExec admits a juju-exec request: it runs anything as the unit's
// agent, so it needs admin access to the model (a hub's admin token, or a
// controller superuser), and a command and at most a valid timeout.
func checkExec(c caller, params map[string]any) error {
	if c.Access != hubtrust.AccessAdmin && c.Access != hubtrust.AccessSuperuser {
		return api.Errorf(api.CodeForbidden, "%s needs admin access to the model (%s access given)", api.ExecAction, c.Access)
	}
	for k, v := range params {
		switch k {
		case "command":
			if cmd, _ := v.(string); strings.TrimSpace(cmd) == "" {
				return api.Errorf(api.CodeInvalid, "%s: command must be a non-empty string", api.ExecAction)
			}
		case "timeout":
			t, _ := v.(string)
			if d, err := time.ParseDuration(t); err != nil || d <= 0 {
				return api.Errorf(api.CodeInvalid, "%s: timeout %v: want a positive duration such as 5m", api.ExecAction, v)
			}
		default:
			return api.Errorf(api.CodeInvalid, "%s: unknown parameter %q (it takes command and timeout)", api.ExecAction, k)
		}
	}
	if _, ok := params["command"]; !ok {
		return api.Errorf(api.CodeInvalid, "%s: command is required", api.ExecAction)
	}
	return nil
}

func (s *actionEndpoint) resolveReceiver(snap *state.Snapshot, model, recv string) (string, error) {
	app, rest, ok := strings.Cut(recv, "/")
	if !ok || app == "" || rest == "" {
		return "", api.Errorf(api.CodeInvalid, "bad receiver %q: want a unit (app/0), app/leader or a machine (machine-0)", recv)
	}
	if rest != "leader" {
		return recv, nil
	}
	l, err := snap.LeaseByApp(model, app)
	if err != nil {
		return "", err
	}
	if l == nil || l.Holder == "" {
		return "", api.Errorf(api.CodeNotFound, "application %q has no leader yet", app)
	}
	return l.Holder, nil
}

func (s *actionEndpoint) listTasks(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	list, err := snap.ListTasks(modelOf(r), state.TaskFilter{Receiver: q.Get("receiver"), Status: q.Get("status")})
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, nonNil(list))
}

func taskDone(t *api.Task) bool {
	switch t.Status {
	case api.TaskCompleted, api.TaskFailed, api.TaskCancelled, api.TaskAborted:
		return true
	}
	return false
}

// cancelTask cancels a pending task (juju cancel-task): its unit never
// runs it. A task already running, or finished, is a conflict: an action
// is not stopped half-way.
func (s *actionEndpoint) cancelTask(w http.ResponseWriter, r *http.Request) {
	var t api.Task
	idx, err := s.propose(r, state.CancelTaskType, &state.CancelTaskRequest{ModelUUID: modelOf(r), ID: chi.URLParam(r, "id"), Now: s.now()}, &t)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, idx, &t)
}

// getTask answers at once, or with ?wait=DURATION when the task finishes
// (or the wait ends), like `juju show-task --wait`.
func (s *actionEndpoint) getTask(w http.ResponseWriter, r *http.Request) {
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > 10*time.Minute {
			reply.WriteError(w, r, reply.BadParam("wait", v, "want a duration up to 10m"))
			return
		}
		wait = d
	}
	if _, _, ok := s.read(w, r); !ok {
		return
	}
	model, id := modelOf(r), chi.URLParam(r, "id")
	ctx := r.Context()
	if wait > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	var task *api.Task
	_, _, err := s.b.Store().BlockingQuery(ctx, 0, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		t, err := lookup.Task(snap, model, id)
		if err != nil {
			return nil, 1, err
		}
		task = t
		if wait == 0 || taskDone(t) {
			return t, 1, nil // done: an index above 0 ends the query
		}
		return t, 0, nil // keep waiting
	})
	if err != nil && task == nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, task)
}
