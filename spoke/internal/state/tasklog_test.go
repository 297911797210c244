package state

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

// taskLogBound is the byte bound a task's log is held to.
const taskLogBound = 1 << 20

func taskLogText(task *api.Task) int {
	n := 0
	for _, l := range task.Log {
		n += len(l.Message)
	}
	return n
}

// runningTask enqueues and starts an action on kv/0.
func runningTask(h *harness) string {
	h.t.Helper()
	task := h.must(EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: testModel, Receiver: "kv/0", Action: "backup", Now: t0}).(*api.Task)
	h.must(StartTaskType, &StartTaskRequest{ModelUUID: testModel, ID: task.ID, Now: t0})
	return task.ID
}

// TestTaskLogBoundedInBytes (issue 26, finding 10): a task's stored log
// stays bounded however much its action logs: the message that reaches
// the bound is cut and ends with a marker saying so, and later messages
// are refused as too large, leaving the task as it was.
func TestTaskLogBoundedInBytes(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	id := runningTask(h)
	big := strings.Repeat("x", 256<<10)
	refused := 0
	for range 40 {
		_, err := h.apply(AppendTaskLogType, &AppendTaskLogRequest{ModelUUID: testModel, ID: id, Time: t0, Message: big})
		switch {
		case errors.Is(err, api.ErrTooLarge):
			refused++
		case err != nil:
			t.Fatalf("append: %v", err)
		}
	}
	task, err := h.snap().TaskByID(testModel, id)
	if err != nil {
		t.Fatal(err)
	}
	if n := taskLogText(task); n > taskLogBound {
		t.Fatalf("the task's log holds %d bytes in %d messages after 10 MiB were logged, want at most %d", n, len(task.Log), taskLogBound)
	}
	if last := task.Log[len(task.Log)-1].Message; !strings.Contains(last, "log is full") {
		t.Fatalf("the last message does not say the log is full: ...%q", last[max(0, len(last)-80):])
	}
	if refused == 0 {
		t.Fatal("no append was refused once the log was full")
	}
	// A finished task keeps its bounded log.
	done := h.must(FinishTaskType, &FinishTaskRequest{ModelUUID: testModel, ID: id, Status: api.TaskCompleted, Now: t0}).(*api.Task)
	if taskLogText(done) != taskLogText(task) {
		t.Fatalf("finishing changed the log: %d bytes, was %d", taskLogText(done), taskLogText(task))
	}
}

// TestTaskLogAppendDoesNotCopyTheLog (issue 26, finding 10): appending to
// a task's log does not copy the log each time (which made a long action's
// log quadratic): the versions share their messages' storage, growing it
// now and then, and a snapshot taken before an append still sees the log
// as it was.
func TestTaskLogAppendDoesNotCopyTheLog(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	id := runningTask(h)
	const appends = 1000
	copies := 0
	var before *Snapshot
	var last *api.TaskLog
	for i := range appends {
		if i == appends/2 {
			before = h.snap()
		}
		task := h.must(AppendTaskLogType, &AppendTaskLogRequest{ModelUUID: testModel, ID: id, Time: t0, Message: fmt.Sprint("line ", i)}).(*api.Task)
		if &task.Log[0] != last {
			copies++
			last = &task.Log[0]
		}
	}
	if copies > 20 {
		t.Fatalf("%d appends copied the log %d times", appends, copies)
	}
	old, err := before.TaskByID(testModel, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Log) != appends/2 || old.Log[len(old.Log)-1].Message != fmt.Sprint("line ", appends/2-1) {
		t.Fatalf("a snapshot's task log changed under it: %d messages", len(old.Log))
	}
	now, _ := h.snap().TaskByID(testModel, id)
	for i, l := range now.Log {
		if l.Message != fmt.Sprint("line ", i) {
			t.Fatalf("message %d is %q", i, l.Message)
		}
	}
}
