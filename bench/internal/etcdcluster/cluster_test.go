package etcdcluster

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/tests/testkit"
)

func TestClusterPutAndStop(t *testing.T) {
	testkit.CheckLeaks(t)
	bin, err := filepath.Abs("../../bin/etcd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skip("bin/etcd not built: cd bench && go build -o bin/etcd go.etcd.io/etcd/server/v3")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, Config{Binary: bin, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Target().Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	got, err := c.Client().Get(ctx, "k")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v" {
		t.Fatalf("get k = %v, %v", got, err)
	}
	var pids []int
	for _, m := range c.members {
		pids = append(pids, m.cmd.Process.Pid)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		// Reaped children no longer exist: signal 0 fails with ESRCH.
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("member pid %d still running after Stop", pid)
		}
	}
}
