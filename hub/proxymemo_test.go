package hub_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// TestRememberedReadsFollowRevocation: a reader's proxied read is
// remembered (the next one skips the router and the lookups), and a
// revocation made through the hub drops it, so the very next read is
// refused.
func TestRememberedReadsFollowRevocation(t *testing.T) {
	f := newProxyFixture(t)
	rita, admin := f.token(f.rita, time.Minute, ""), f.token(f.alice, time.Minute, "")
	status := "/v1/models/" + f.model + "/status"
	for i := range 2 {
		if code, b := f.do(http.MethodGet, status, rita, nil); code != http.StatusOK {
			t.Fatalf("read %d: %d %s", i, code, b)
		}
		if !f.hub.RemembersRead(rita, f.model) {
			t.Fatalf("read %d was not remembered", i)
		}
	}
	if code, b := f.do(http.MethodGet, "/v1/models/"+f.model+"/applications", rita, nil); code != http.StatusOK {
		t.Fatalf("another read of the model from the remembered route: %d %s", code, b)
	}
	if f.hub.RemembersRead(rita, "00000000-0000-0000-0000-000000000000") {
		t.Fatal("a route is remembered for a model never read")
	}

	grant := map[string]string{"user": "rita@example.com", "level": "read", "model": f.model}
	if code, b := f.do(http.MethodDelete, "/v1/grants", admin, grant); code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", code, b)
	}
	if f.hub.RemembersRead(rita, f.model) {
		t.Fatal("the revocation left the remembered read in place")
	}
	if code, b := f.do(http.MethodGet, status, rita, nil); code != http.StatusNotFound {
		t.Fatalf("the first read after the revocation: %d %s, want 404", code, b)
	}
	if f.hub.RemembersRead(rita, f.model) {
		t.Fatal("a refused read was remembered")
	}
}

// TestRememberedReadsDoNotServeRelationData: relation data needs write
// access, so a writer whose reads of the model are remembered (with a
// controller token that only reads) still gets it, decided afresh, and a
// reader with remembered reads is still refused.
func TestRememberedReadsDoNotServeRelationData(t *testing.T) {
	f := newProxyFixture(t)
	code, b := f.do(http.MethodPost, "/v1/models/"+f.model+"/applications", f.token(f.alice, time.Minute, ""),
		map[string]any{"application": "kv", "charm-sha256": f.charmSHA, "num-units": 1})
	if code != http.StatusCreated {
		t.Fatalf("deploy: %d %s", code, b)
	}
	info := "/v1/models/" + f.model + "/units/kv/0/relation-info"
	for _, c := range []struct {
		who  string
		tok  string
		want int
	}{{"writer", f.token(f.will, time.Minute, ""), http.StatusOK}, {"reader", f.token(f.rita, time.Minute, ""), http.StatusForbidden}} {
		for range 2 {
			if code, b := f.do(http.MethodGet, "/v1/models/"+f.model+"/status", c.tok, nil); code != http.StatusOK {
				t.Fatalf("%s's status: %d %s", c.who, code, b)
			}
		}
		if !f.hub.RemembersRead(c.tok, f.model) {
			t.Fatalf("the %s's reads were not remembered", c.who)
		}
		if code, b := f.do(http.MethodGet, info, c.tok, nil); code != c.want {
			t.Fatalf("%s's relation-info after remembered reads: %d %s, want %d", c.who, code, b, c.want)
		}
	}
}

// TestControllerChecksWhatTheHubDecides: the controller does not take the
// hub's word on which routes an access allows: a read token gets no
// relation data and a write token runs no juju exec there either.
func TestControllerChecksWhatTheHubDecides(t *testing.T) {
	f := newProxyFixture(t)
	ctx := t.Context()
	code, b := f.do(http.MethodPost, "/v1/models/"+f.model+"/applications", f.token(f.alice, time.Minute, ""),
		map[string]any{"application": "kv", "charm-sha256": f.charmSHA, "num-units": 1})
	if code != http.StatusCreated {
		t.Fatalf("deploy: %d %s", code, b)
	}
	mp := "/v1/models/" + f.model
	exec := api.RunActionRequest{Action: api.ExecAction, Receivers: []string{"kv/0"}, Params: map[string]any{"command": "id"}}
	for _, c := range []struct {
		what, access, method, path string
		in                         any
		want                       string
	}{
		{"relation data with read access", "read", http.MethodGet, mp + "/units/kv/0/relation-info", nil, "relation data needs write access"},
		{"juju exec with write access", "write", http.MethodPost, mp + "/actions", exec, "juju-exec needs admin access"},
	} {
		err := f.hub.CallSpoke(ctx, "east", f.alice, c.access, f.model, c.method, c.path, c.in, nil)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.CodeForbidden || !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: %v, want forbidden: %s", c.what, err, c.want)
		}
	}
	var infos []api.UnitRelationInfo
	if err := f.hub.CallSpoke(ctx, "east", f.alice, "write", f.model, http.MethodGet, mp+"/units/kv/0/relation-info", nil, &infos); err != nil || infos == nil {
		t.Errorf("relation data with write access: %+v %v", infos, err)
	}
}

// TestLargeExecThroughTheHub: a juju exec whose body is too large for the
// hub to read (a long script) still runs for a model administrator, whose
// token says admin, and is still refused a writer, by the controller.
func TestLargeExecThroughTheHub(t *testing.T) {
	f := newProxyFixture(t)
	code, b := f.do(http.MethodPost, "/v1/models/"+f.model+"/applications", f.token(f.alice, time.Minute, ""),
		map[string]any{"application": "kv", "charm-sha256": f.charmSHA, "num-units": 1})
	if code != http.StatusCreated {
		t.Fatalf("deploy: %d %s", code, b)
	}
	exec := api.RunActionRequest{Action: api.ExecAction, Receivers: []string{"kv/0"},
		Params: map[string]any{"command": "true # " + strings.Repeat("x", 70<<10)}}
	for _, c := range []struct {
		who  string
		tok  string
		want int
	}{{"admin", f.token(f.alice, time.Minute, ""), http.StatusCreated}, {"writer", f.token(f.will, time.Minute, ""), http.StatusForbidden}} {
		if code, b := f.do(http.MethodPost, "/v1/models/"+f.model+"/actions", c.tok, exec); code != c.want {
			t.Errorf("%s's 70 KiB exec: %d %.200s, want %d", c.who, code, b, c.want)
		}
	}
}
