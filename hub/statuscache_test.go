package hub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub"
)

// TestStatusCopiesAreRevalidated: the hub keeps a model's status and asks
// the controller on every read whether it changed. Unchanged, the copy is
// sent (the controller answered 304), as the controller would have sent
// it; changed at the controller behind the hub's back, the next read
// through the hub has the change. Every reader of the model shares the
// copy, and a caller that says no-store gets the controller's answer
// relayed.
func TestStatusCopiesAreRevalidated(t *testing.T) {
	f := newProxyFixture(t)
	alice, rita, will := f.token(f.alice, time.Minute, ""), f.token(f.rita, time.Minute, ""), f.token(f.will, time.Minute, "")
	code, b := f.do(http.MethodPost, "/v1/models/"+f.model+"/applications", alice,
		map[string]any{"application": "kv", "charm-sha256": f.charmSHA, "num-units": 1})
	if code != http.StatusCreated {
		t.Fatalf("deploy: %d %s", code, b)
	}
	path := "/v1/models/" + f.model + "/status"
	read := func(tok string, header ...string) *api.FullStatus {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		hc := f.client
		if hc == nil {
			hc = http.DefaultClient
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var st api.FullStatus
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &st) != nil {
			t.Fatalf("status through the hub: %d %s", resp.StatusCode, body)
		}
		if resp.Header.Get(api.HeaderIndex) != jsonIndex(st.Index) || resp.Header.Get("ETag") != "" {
			t.Fatalf("answer headers %v for a status at index %d", resp.Header, st.Index)
		}
		return &st
	}
	// same compares a status read through the hub with one read from the
	// controller directly just before it: equal but for the time, and an
	// index no older.
	same := func(what string, got *api.FullStatus) {
		t.Helper()
		direct, err := f.spoke.Admin.Model(f.model).Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got.Index < direct.Index {
			t.Fatalf("%s: index %d, older than the controller's %d", what, got.Index, direct.Index)
		}
		direct.Index, direct.Controller.Timestamp = got.Index, got.Controller.Timestamp
		if !reflect.DeepEqual(got, direct) {
			t.Fatalf("%s differs from the controller's:\n%+v\n%+v", what, got, direct)
		}
	}
	counts := func() (int64, int64) { return f.hub.StatusCopies() }

	same("the first read", read(rita))
	if rv, kept := counts(); rv != 0 || kept != 1 {
		t.Fatalf("after the first read: %d revalidated, %d kept; want 0, 1", rv, kept)
	}
	same("the second read", read(rita))
	same("another reader's", read(will))
	if rv, kept := counts(); rv != 2 || kept != 1 {
		t.Fatalf("after three reads: %d revalidated, %d kept; want 2, 1", rv, kept)
	}

	// Changed at the controller directly: the next read has it.
	if _, err := f.spoke.Admin.Model(f.model).AddUnits(t.Context(), "kv", api.AddUnitsRequest{NumUnits: 1}); err != nil {
		t.Fatal(err)
	}
	st := read(rita)
	same("the read after a change at the controller", st)
	if n := len(st.Applications["kv"].Units); n != 2 {
		t.Fatalf("after add-unit at the controller the hub shows %d units", n)
	}
	if rv, kept := counts(); rv != 2 || kept != 2 {
		t.Fatalf("after the change: %d revalidated, %d kept; want 2, 2", rv, kept)
	}

	// no-store: relayed, not kept, not revalidated.
	same("a no-store read", read(rita, "Cache-Control", "no-store"))
	if rv, kept := counts(); rv != 2 || kept != 2 {
		t.Fatalf("after a no-store read: %d revalidated, %d kept; want 2, 2", rv, kept)
	}
	same("the read after", read(rita))
	if rv, _ := counts(); rv != 3 {
		t.Fatalf("the copy was not revalidated after a no-store read: %d", rv)
	}
	if takeovers, _ := f.hub.Taken(); takeovers == 0 {
		t.Fatal("no read went through a taken connection: the test covers only net/http's path")
	}
}

// TestStatusCopiesOff: with no status kept, every read is relayed.
func TestStatusCopiesOff(t *testing.T) {
	f := newProxyFixture(t, func(c *hub.Config) { c.StatusCacheBytes = -1 })
	rita := f.token(f.rita, time.Minute, "")
	for range 3 {
		if code, b := f.do(http.MethodGet, "/v1/models/"+f.model+"/status", rita, nil); code != http.StatusOK {
			t.Fatalf("status: %d %s", code, b)
		}
	}
	if rv, kept := f.hub.StatusCopies(); rv != 0 || kept != 0 {
		t.Fatalf("%d revalidated, %d kept with the cache off", rv, kept)
	}
}

func jsonIndex(i uint64) string { b, _ := json.Marshal(i); return string(b) }
