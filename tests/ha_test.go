package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestEnableHAGrowsALocalControllerAndSurvivesLeaderLoss bootstraps one
// real droverd, asks it through the API for 3 nodes (it starts two more
// droverd processes that join), then SIGKILLs the original node: the other
// two elect a leader and a client that learned every address keeps working.
func TestEnableHAGrowsALocalControllerAndSurvivesLeaderLoss(t *testing.T) {
	c := startProcCluster(t, 1)
	t.Cleanup(func() { killHANodes(t, c.nodes[0].dir) })
	ctx := t.Context()
	admin := c.client(0)
	// enable-ha answers once two new droverd processes have started and
	// vote: on a loaded machine that outlasts a plain call's 10 s (drover
	// gives every call 30 s).
	info, err := c.clientWithin(60*time.Second, 0).EnableHA(ctx, 3)
	if err != nil {
		t.Fatalf("enable-ha: %v", err)
	}
	voters := 0
	for _, n := range info.Nodes {
		if n.Voter {
			voters++
		}
	}
	if voters != 3 || len(info.APIAddresses) != 3 {
		t.Fatalf("after enable-ha: %+v", info)
	}
	if _, err := admin.AddModel(ctx, api.AddModelRequest{Name: "before"}); err != nil {
		t.Fatal(err)
	}
	cl, err := api.NewClient(api.ClientConfig{Addresses: info.APIAddresses, CACert: []byte(c.cred.CACert),
		User: c.cred.User, Password: c.cred.Password, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c.nodes[0].kill()
	var m *api.Model
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		m, err = cl.AddModel(ctx, api.AddModelRequest{Name: "after"})
		return err == nil || strings.Contains(errString(err), "already exists"), nil
	}, "write after the bootstrap node was killed")
	models, err := cl.Models(ctx, api.ReadOptions{Consistent: true})
	if err != nil || len(models) != 2 {
		t.Fatalf("models on the surviving nodes: %v, %v", models, err)
	}
	_ = m
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// killHANodes stops the droverd processes enable-ha started beside dir,
// by the PIDs they recorded.
func killHANodes(t *testing.T, dir string) {
	matches, _ := filepath.Glob(dir + "-ha-*/droverd.pid")
	for _, f := range matches {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			continue
		}
		// Only a droverd whose command line names this data dir.
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if strings.Contains(string(cmdline), filepath.Dir(f)) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
