package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestAgentEndToEnd deploys the sample charms on real drover-agent
// processes provisioned by a real spoke, and drives them through the
// lifecycle: relate, configure, act, scale, remove.
func TestAgentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	e := newAgentEnv(t, 1)
	if _, err := e.cl.Model(e.model).SetConfig(e.ctx(10*time.Second), api.ConfigChange{Set: map[string]any{"update-status-hook-interval": "3s"}}); err != nil {
		t.Fatal(err)
	}
	kvPort, webPort := testkit.FreePort(t), testkit.FreePort(t)
	// Other servers hold the charms' ports, and answer there as the
	// charms' own would: the units say the port is taken (not that they
	// serve), and serve once the ports are free (update-status tries again).
	var squatters []net.Listener
	for _, port := range []int{kvPort, webPort} {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) }))
		squatters = append(squatters, l)
	}
	e.deploy("kvstore", "kvstore", 1, map[string]any{"port": kvPort})
	e.deploy("webapp", "webapp", 1, map[string]any{"port": webPort, "title": "hello"})
	e.waitUnits("units blocked on their ports", 90*time.Second, func(us map[string]api.Unit) bool {
		return allStatus(us, "kvstore", 1, "blocked", fmt.Sprintf("port %d is in use by another process", kvPort)) &&
			allStatus(us, "webapp", 1, "blocked", fmt.Sprintf("port %d is in use by another process", webPort))
	})
	for _, l := range squatters {
		l.Close()
	}
	e.waitUnits("kvstore active", 90*time.Second, func(us map[string]api.Unit) bool {
		return allStatus(us, "kvstore", 1, "active", fmt.Sprintf("serving on port %d", kvPort))
	})
	e.waitUnits("webapp waiting for kv", 90*time.Second, func(us map[string]api.Unit) bool {
		return allStatus(us, "webapp", 1, "blocked", "waiting for a kvstore relation")
	})

	// Relate: the webapp learns the kvstore's address from its bags; the
	// kvstore records the webapp's URL (from the webapp's unit bag) in the
	// store itself: data flows both ways.
	if _, err := e.cl.Model(e.model).Integrate(e.ctx(10*time.Second), "webapp", "kvstore"); err != nil {
		t.Fatal(err)
	}
	e.waitUnits("webapp serving", 60*time.Second, func(us map[string]api.Unit) bool {
		return allStatus(us, "webapp", 1, "active", "serving hello from kvstore/0") &&
			allStatus(us, "kvstore", 1, "active", "(1 clients)")
	})
	task := e.runAction("kvstore/0", "get", map[string]any{"key": "client:webapp/0"})
	if task.Status != api.TaskCompleted || !strings.Contains(fmt.Sprint(task.Results["value"]), fmt.Sprintf(":%d", webPort)) {
		t.Fatalf("kvstore did not record the webapp's URL from its bag: %+v", task)
	}

	// Actions with params; the workload serves what was stored.
	task = e.runAction("kvstore/0", "set", map[string]any{"key": "greeting", "value": "hi there"})
	if task.Status != api.TaskCompleted || task.Results["stored"] != "true" || len(task.Log) == 0 {
		t.Fatalf("set: %+v", task)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/data", webPort))
		return err == nil && strings.Contains(body, `"greeting": "hi there"`), err
	}, "webapp serves data from kvstore")
	task = e.runAction("kvstore/0", "get", map[string]any{"key": "missing"})
	if task.Status != api.TaskFailed || !strings.Contains(task.Message, "not found") {
		t.Fatalf("get of a missing key: %+v", task)
	}
	task = e.runAction("kvstore/0", "flush", map[string]any{"prefix": "greet"})
	if task.Status != api.TaskCompleted || task.Results["deleted"] != "1" {
		t.Fatalf("flush: %+v", task)
	}

	// Config: the title changes on the page; the kv port moves and the
	// webapp follows it through the relation.
	if _, err := e.cl.Model(e.model).SetApplicationConfig(e.ctx(10*time.Second), "webapp", api.ConfigChange{Set: map[string]any{"title": "changed"}}); err != nil {
		t.Fatal(err)
	}
	kvPort2 := testkit.FreePort(t)
	if _, err := e.cl.Model(e.model).SetApplicationConfig(e.ctx(10*time.Second), "kvstore", api.ConfigChange{Set: map[string]any{"port": kvPort2}}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/data", webPort))
		var page struct {
			Title, Backend string
			Error          *string
		}
		if err == nil {
			err = json.Unmarshal([]byte(body), &page)
		}
		return err == nil && page.Title == "changed" && strings.HasSuffix(page.Backend, fmt.Sprint(kvPort2)) && page.Error == nil, err
	}, "webapp follows config and the kvstore's new port")

	// A peer cluster of three: the leader publishes the members in the
	// peer app bag; the others report it.
	e.deploy("cluster", "cluster", 3, nil)
	e.waitUnits("cluster formed", 120*time.Second, func(us map[string]api.Unit) bool {
		return clusterFormed(us, 3)
	})
	// The subordinate rides along with the webapp.
	e.deploy("logfwd", "logfwd", 0, nil)
	if _, err := e.cl.Model(e.model).Integrate(e.ctx(10*time.Second), "logfwd", "webapp"); err != nil {
		t.Fatal(err)
	}
	e.waitUnits("logfwd forwarding", 60*time.Second, func(us map[string]api.Unit) bool {
		return allStatus(us, "logfwd", 1, "active", "forwarding webapp/0")
	})

	// Scale the cluster up and down.
	if _, err := e.cl.Model(e.model).Scale(e.ctx(10*time.Second), "cluster", 4); err != nil {
		t.Fatal(err)
	}
	e.waitUnits("cluster of 4", 120*time.Second, func(us map[string]api.Unit) bool { return clusterFormed(us, 4) })
	if _, err := e.cl.Model(e.model).Scale(e.ctx(10*time.Second), "cluster", 2); err != nil {
		t.Fatal(err)
	}
	e.waitUnits("cluster of 2", 120*time.Second, func(us map[string]api.Unit) bool { return clusterFormed(us, 2) })

	// Remove the kvstore: the webapp sees departed and broken.
	if err := e.cl.Model(e.model).RemoveApplication(e.ctx(10*time.Second), "kvstore", false); err != nil {
		t.Fatal(err)
	}
	e.waitUnits("kvstore gone", 90*time.Second, func(us map[string]api.Unit) bool {
		return len(appUnits(us, "kvstore")) == 0 && allStatus(us, "webapp", 1, "blocked", "waiting for a kvstore relation")
	})
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/kv", kvPort2))
		return err != nil, nil
	}, "the kvstore server stopped")
	// As in Juju, the machines removed units leave (the kvstore's, the
	// cluster's scaled down) are released: each machine left hosts a unit.
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		st, err := e.cl.Model(e.model).Status(e.ctx(10 * time.Second))
		if err != nil {
			return false, err
		}
		hosting := map[string]bool{}
		for _, app := range st.Applications {
			for _, u := range app.Units {
				hosting[u.Machine] = true
			}
		}
		for id := range st.Machines {
			if !hosting[id] {
				return false, fmt.Errorf("machine %s hosts no unit", id)
			}
		}
		return true, nil
	}, "empty machines released")

	// Every unit's observed hook sequence is valid.
	for _, u := range e.units() {
		if testing.Verbose() {
			t.Logf("%s observed:\n  %s", u.Name, strings.Join(e.hookLog(u), "\n  "))
		}
		if err := validSequence(e.hookLog(u), u.Application == "logfwd"); err != nil {
			t.Errorf("%s: %v\n%s", u.Name, err, strings.Join(e.hookLog(u), "\n"))
		}
	}

	// Destroy the model, without force: the units run their teardown
	// hooks, the machines they leave are released, and the model goes.
	if _, err := e.cl.Model(e.model).Destroy(e.ctx(10*time.Second), false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 120*time.Second, func() (bool, error) {
		_, err := e.cl.Model(e.model).Info(e.ctx(10 * time.Second))
		if api.CodeOf(err) == api.CodeNotFound {
			return true, nil
		}
		st, serr := e.cl.Model(e.model).Status(e.ctx(10 * time.Second))
		if serr != nil {
			return false, serr
		}
		return false, fmt.Errorf("%d applications, %d machines left", len(st.Applications), len(st.Machines))
	}, "the destroyed model gone")
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		left, err := os.ReadDir(filepath.Join(e.machineDir, e.model))
		return os.IsNotExist(err) || len(left) == 0, nil
	}, "the model's machines released")
}

// clusterFormed: n cluster units, one "leader of n", the rest "member of n".
func clusterFormed(us map[string]api.Unit, n int) bool {
	cs := appUnits(us, "cluster")
	if len(cs) != n {
		return false
	}
	leaders := 0
	for _, u := range cs {
		switch {
		case u.AgentStatus.Status != "idle" || u.Life != api.Alive:
			return false
		case u.WorkloadStatus.Message == fmt.Sprintf("leader of %d", n):
			leaders++
		case u.WorkloadStatus.Message != fmt.Sprintf("member of %d", n):
			return false
		}
	}
	return leaders == 1
}
