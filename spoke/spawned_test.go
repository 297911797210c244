package spoke

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/droverhq/drover/tests/testkit"
)

// TestSpawnedReaped: a node EnableHA started that exits is reaped (no
// zombie), and run returns when its ctx ends.
func TestSpawnedReaped(t *testing.T) {
	var c spawned
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start true: %v", err)
	}
	c.add(cmd.Process.Pid)
	_ = cmd.Process.Release()
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) { return c.reap() == 0, nil }, "the exited node reaped")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
