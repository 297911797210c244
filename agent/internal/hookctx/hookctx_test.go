package hookctx

import (
	"errors"
	"testing"
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
