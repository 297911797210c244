package state

import (
	"strconv"
	"unicode/utf8"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// TaskFilter narrows ListTasks; empty fields match everything.
type TaskFilter struct {
	Receiver string
	Status   string
}

// TaskByID returns a task, or nil.
func (r *reader) TaskByID(model, id string) (*api.Task, error) {
	return first[api.Task](r, tables.Tasks, "id", model, id)
}

// ListTasks returns a model's tasks matching f.
func (r *reader) ListTasks(model string, f TaskFilter) ([]*api.Task, error) {
	var all []*api.Task
	var err error
	switch {
	case f.Receiver != "":
		all, err = list[api.Task](r, tables.Tasks, "receiver", model, f.Receiver)
	case f.Status != "":
		all, err = list[api.Task](r, tables.Tasks, "status", model, f.Status)
	default:
		all, err = list[api.Task](r, tables.Tasks, "model", model)
	}
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, t := range all {
		if (f.Receiver == "" || t.Receiver == f.Receiver) && (f.Status == "" || t.Status == f.Status) {
			out = append(out, t)
		}
	}
	return out, nil
}

// enqueueTask queues an action on a unit, or juju-exec on a machine; IDs
// count up from Model.NextTask.
func enqueueTask(t *Txn, req *EnqueueTaskRequest) (*api.Task, error) {
	m, err := t.aliveModel(req.ModelUUID)
	if err != nil {
		return nil, err
	}
	receiver, err := taskReceiver(t, req)
	if err != nil {
		return nil, err
	}
	if req.Action == "" {
		return nil, api.Errorf(api.CodeInvalid, "action name is required")
	}
	m = copyModel(m)
	task := &api.Task{
		ModelUUID: m.UUID, ID: strconv.Itoa(m.NextTask), Receiver: receiver, Action: req.Action,
		Params: copyAnyMap(req.Params), Parallel: req.Parallel, ExecutionGroup: req.ExecutionGroup,
		Operation: req.Operation, Status: api.TaskPending, Enqueued: req.Now,
	}
	m.NextTask++
	if err := t.put(tables.Models, m); err != nil {
		return nil, err
	}
	return task, t.put(tables.Tasks, task)
}

// taskReceiver is the receiver of the task req enqueues: a unit that is
// not dead, or a machine that is not dead (only juju-exec runs on a
// machine: it has no charm to hold other actions).
func taskReceiver(t *Txn, req *EnqueueTaskRequest) (string, error) {
	if req.Machine == "" {
		u, err := t.unit(req.ModelUUID, req.Receiver)
		if err != nil {
			return "", err
		}
		if u.Life == api.Dead {
			return "", api.Errorf(api.CodeConflict, "unit %q is dead", u.Name)
		}
		return u.Name, nil
	}
	if req.Receiver != "" {
		return "", api.Errorf(api.CodeInvalid, "a task runs on a unit or on a machine, not both (%q and machine %q)", req.Receiver, req.Machine)
	}
	if req.Action != api.ExecAction {
		return "", api.Errorf(api.CodeInvalid, "only %s runs on a machine, not %q", api.ExecAction, req.Action)
	}
	mc, err := t.machine(req.ModelUUID, req.Machine)
	if err != nil {
		return "", err
	}
	if mc.Life == api.Dead {
		return "", api.Errorf(api.CodeConflict, "machine %q is dead", mc.ID)
	}
	return api.MachineReceiver(mc.ID), nil
}

// startTask moves a pending task to running.
func startTask(t *Txn, req *StartTaskRequest) (*api.Task, error) {
	task, err := t.taskIn(req.ModelUUID, req.ID, api.TaskPending)
	if err != nil {
		return nil, err
	}
	task = copyTask(task)
	task.Status, task.Started = api.TaskRunning, req.Now
	return task, t.put(tables.Tasks, task)
}

// MaxTaskLogBytes bounds a task's log: its messages' bytes, each message
// counted with taskLogEntryOverhead so that many short ones are bounded
// too. The message that would cross the bound is cut and ends with
// taskLogFullMarker; later messages are refused as too large. The bound
// lives in Apply, so every node keeps the same log.
const MaxTaskLogBytes = 1 << 20

// taskLogEntryOverhead is what one log entry costs beyond its text.
const taskLogEntryOverhead = 64

// taskLogFullMarker ends the last message a full task log records.
const taskLogFullMarker = " … [this task's log is full at 1 MiB: later messages are not recorded]"

// taskLogReserve is the room kept for the entry that says the log is full;
// a log using more than MaxTaskLogBytes-taskLogReserve is full.
const taskLogReserve = taskLogEntryOverhead + len(taskLogFullMarker)

func taskLogSize(log []api.TaskLog) int {
	n := 0
	for _, l := range log {
		n += taskLogEntryOverhead + len(l.Message)
	}
	return n
}

// appendTaskLog appends a log message to a running task, within
// MaxTaskLogBytes.
//
// The new version shares the old one's log storage, and its Params and
// Results: stored objects are never changed in place, every older version
// reads only its own prefix of the log, and only the newest version
// appends, so appending costs the message and not a copy of the log.
func appendTaskLog(t *Txn, req *AppendTaskLogRequest) (*api.Task, error) {
	task, err := t.taskIn(req.ModelUUID, req.ID, api.TaskRunning)
	if err != nil {
		return nil, err
	}
	used := taskLogSize(task.Log)
	if used > MaxTaskLogBytes-taskLogReserve {
		return nil, api.Errorf(api.CodeTooLarge, "task %s's log is full (%d bytes): the message is not recorded", task.ID, MaxTaskLogBytes)
	}
	msg := req.Message
	if used+taskLogEntryOverhead+len(msg) > MaxTaskLogBytes-taskLogReserve {
		msg = cutText(msg, MaxTaskLogBytes-used-taskLogReserve) + taskLogFullMarker
	}
	next := *task
	next.Log = append(task.Log, api.TaskLog{Time: req.Time, Message: msg})
	return &next, t.put(tables.Tasks, &next)
}

// cutText is s's first n bytes at most, cut on a UTF-8 character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// finishTask ends a pending or running task.
func finishTask(t *Txn, req *FinishTaskRequest) (*api.Task, error) {
	switch req.Status {
	case api.TaskCompleted, api.TaskFailed, api.TaskAborted:
	default:
		return nil, api.Errorf(api.CodeInvalid, "cannot finish a task as %q", req.Status)
	}
	task, err := t.taskIn(req.ModelUUID, req.ID, api.TaskPending, api.TaskRunning)
	if err != nil {
		return nil, err
	}
	task = copyTask(task)
	task.Status, task.Message, task.Results, task.Completed = req.Status, req.Message, copyAnyMap(req.Results), req.Now
	return task, t.put(tables.Tasks, task)
}

// cancelTask cancels a pending task.
func cancelTask(t *Txn, req *CancelTaskRequest) (*api.Task, error) {
	task, err := t.taskIn(req.ModelUUID, req.ID, api.TaskPending)
	if err != nil {
		return nil, err
	}
	task = copyTask(task)
	task.Status, task.Completed = api.TaskCancelled, req.Now
	return task, t.put(tables.Tasks, task)
}

// taskIn returns a task whose status is one of statuses: NotFound if
// there is no such task, a Conflict if it has another status.
func (t *Txn) taskIn(model, id string, statuses ...string) (*api.Task, error) {
	task, err := t.TaskByID(model, id)
	if err != nil {
		return nil, err
	}
	if task == nil {
		return nil, api.Errorf(api.CodeNotFound, "task %q not found", id)
	}
	for _, s := range statuses {
		if task.Status == s {
			return task, nil
		}
	}
	return nil, api.Errorf(api.CodeConflict, "task %s is %s", id, task.Status)
}
