package drovercluster

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

func TestLeaderFirst(t *testing.T) {
	info := &api.ControllerInfo{Nodes: []api.NodeInfo{
		{APIAddress: "a:1", Voter: true}, {APIAddress: "b:1", Voter: true}, {APIAddress: "c:1", Voter: true, Leader: true},
	}}
	got, err := leaderFirst(info)
	if err != nil || !slices.Equal(got, []string{"c:1", "b:1", "a:1"}) {
		t.Fatalf("leaderFirst = %v, %v", got, err)
	}
	info.Nodes[2].Leader = false
	if _, err := leaderFirst(info); err == nil {
		t.Fatal("no leader accepted")
	}
	if err := checkVoters(info, 3); err == nil {
		t.Fatal("checkVoters passed without a leader")
	}
	info.Nodes[0].Leader = true
	if err := checkVoters(info, 3); err != nil {
		t.Fatal(err)
	}
	if err := checkVoters(info, 2); err == nil {
		t.Fatal("checkVoters(2) passed with 3 voters")
	}
}

// TestTargetPut drives Target against a fake TLS API on the leader's
// address: it must create one model there and PATCH its config per Put.
func TestTargetPut(t *testing.T) {
	var (
		mu      sync.Mutex
		patches []map[string]any
	)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/models", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Model{UUID: "m-1", Name: "commitbench"})
	})
	mux.HandleFunc("PATCH /v1/models/{uuid}/config", func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != "pw" {
			http.Error(w, "no auth", http.StatusUnauthorized)
			return
		}
		var ch api.ConfigChange
		if err := json.NewDecoder(r.Body).Decode(&ch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		patches = append(patches, ch.Set)
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(ch.Set)
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	leader := strings.TrimPrefix(srv.URL, "https://")
	info := &api.ControllerInfo{Nodes: []api.NodeInfo{
		{APIAddress: "127.0.0.1:1", Voter: true}, {APIAddress: leader, Voter: true, Leader: true},
	}}
	tg, err := NewTarget(t.Context(), info, api.ClientConfig{CACert: ca, User: "admin", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.Name() != "drover" || tg.Model("bench/a") == "" || tg.Model("bench/a") != tg.Model("bench/a") {
		t.Fatalf("name %q model %q", tg.Name(), tg.Model("bench/a"))
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := tg.Put(t.Context(), "bench/"+string(rune('a'+i)), "v"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	keys := map[string]bool{}
	for _, p := range patches {
		for k, v := range p {
			keys[k] = len(p) == 1 && v == "v"
		}
	}
	if len(patches) != 8 || len(keys) != 8 || !keys["bench/a"] || !keys["bench/h"] {
		t.Fatalf("patches = %v", patches)
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Binary: "/nonexistent/droverd"}
	err := c.validate()
	if err == nil || !strings.Contains(err.Error(), "no Dir") || !strings.Contains(err.Error(), "droverd binary") {
		t.Fatalf("validate = %v", err)
	}
	if c.Nodes != 3 {
		t.Fatalf("default nodes = %d", c.Nodes)
	}
}

// TestClusterPutAndStop runs the real 3-process controller when
// bench/bin/droverd has been built.
func TestClusterPutAndStop(t *testing.T) {
	testkit.CheckLeaks(t)
	bin, err := filepath.Abs("../../bin/droverd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skip("bin/droverd not built: go build -o bench/bin/droverd ./cmd/droverd")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	defer func() {
		if t.Failed() {
			for _, n := range []string{"n1", "n2", "n3"} {
				b, _ := os.ReadFile(filepath.Join(dir, n+".log"))
				t.Logf("%s.log:\n%s", n, b)
			}
		}
	}()
	c, err := Start(ctx, Config{Binary: bin, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	if err := c.Target().Put(ctx, "bench/k", "v"); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.admin.Model(c.Target().Model("bench/k")).Config(ctx, api.ReadOptions{Consistent: true})
	if err != nil || cfg["bench/k"] != "v" {
		t.Fatalf("model config = %v, %v", cfg, err)
	}
	var pids []int
	for _, n := range c.nodes {
		pids = append(pids, n.cmd.Process.Pid)
	}
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("node pid %d still running after Stop", pid)
		}
	}
}
