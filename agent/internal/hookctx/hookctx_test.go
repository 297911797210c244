package hookctx

import (
	"errors"
	"testing"

	"github.com/droverhq/drover/api"
)

func TestParsePortRange(t *testing.T) {
	for in, want := range map[string]string{
		"8080": "8080/tcp", "8080/TCP": "8080/tcp", "1000-2000/udp": "1000-2000/udp", "icmp": "icmp", "ICMP": "icmp", "80-80": "80/tcp",
	} {
		got, err := ParsePortRange(in)
		if err != nil || got.String() != want {
			t.Errorf("ParsePortRange(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "0", "70000", "2-1", "80/sctp", "80/icmp", "1-2-3", "icmp/udp"} {
		if _, err := ParsePortRange(in); err == nil {
			t.Errorf("ParsePortRange(%q) succeeded", in)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{Unit: "app"}); err == nil {
		t.Error("bad unit accepted")
	}
	cfg := Config{Unit: "app/0", Remote: nil, Log: func(string, string, string) {}}
	if _, err := New(cfg); err == nil {
		t.Error("nil Remote accepted")
	}
}

func TestRelationNotFound(t *testing.T) {
	c := &Context{relations: map[int]*relationState{}}
	if _, err := c.Relation(3); !errors.Is(err, ErrRelationNotFound) {
		t.Errorf("err = %v", err)
	}
	if err := c.SetSettings(t.Context(), 3, false, nil); !errors.Is(err, ErrRelationNotFound) {
		t.Errorf("err = %v", err)
	}
}

func TestActionRunOutsideAction(t *testing.T) {
	a := &ActionRun{}
	if _, ok := a.Info(); ok {
		t.Error("Info reports an action")
	}
	if _, err := a.Params(); !errors.Is(err, ErrNotInAction) {
		t.Errorf("Params err = %v", err)
	}
	if err := a.SetResult([]string{"k"}, "v"); !errors.Is(err, ErrNotInAction) {
		t.Errorf("SetResult err = %v", err)
	}
	if err := a.Fail(""); !errors.Is(err, ErrNotInAction) {
		t.Errorf("Fail err = %v", err)
	}
	if err := a.Log(t.Context(), "m"); !errors.Is(err, ErrNotInAction) {
		t.Errorf("Log err = %v", err)
	}
}

func TestPortsPendingStayOutOfOpened(t *testing.T) {
	p := newPorts([]api.Port{{Protocol: "tcp", From: 80, To: 80}})
	p.Open("", PortRange{Protocol: "tcp", From: 80, To: 80})   // already open: no-op
	p.Open("db", PortRange{Protocol: "udp", From: 53, To: 53}) // pending
	if got := p.Opened(); len(got) != 1 || got[0].Range.From != 80 {
		t.Errorf("Opened = %v", got)
	}
	open, closed := p.changes()
	if len(open) != 1 || open[0].From != 53 || open[0].Endpoints[0] != "db" || len(closed) != 0 {
		t.Errorf("changes = %v, %v", open, closed)
	}
}
