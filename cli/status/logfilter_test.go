package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

func logRec(entity, level, module, msg string) *api.LogRecord {
	return &api.LogRecord{Entity: entity, Level: level, Module: module, Message: msg,
		Time: time.Date(2025, 3, 4, 12, 1, 2, 0, time.UTC)}
}

func TestLogLineFormat(t *testing.T) {
	var buf bytes.Buffer
	f := logFormat{loc: time.UTC}
	if err := f.write(&buf, logRec("unit-kvstore-0", "info", "unit.kvstore/0.juju-log", "Hello\n")); err != nil {
		t.Fatal(err)
	}
	f.date = true
	if err := f.write(&buf, logRec("machine-1", "WARNING", "juju.worker", "disk")); err != nil {
		t.Fatal(err)
	}
	want := "unit-kvstore-0: 12:01:02 INFO unit.kvstore/0.juju-log Hello\n" +
		"machine-1: 2025-03-04 12:01:02 WARNING juju.worker disk\n"
	if buf.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", buf.String(), want)
	}
	buf.Reset()
	f = logFormat{loc: time.UTC, color: true}
	if err := f.write(&buf, logRec("unit-kv-0", "ERROR", "m", "boom")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), ansiRed+"ERROR"+ansiReset) || !strings.HasSuffix(buf.String(), " boom\n") {
		t.Fatalf("colour line %q", buf.String())
	}
}

func TestLogFilter(t *testing.T) {
	kv0 := logRec("unit-kv-0", "INFO", "unit.kv/0.juju-log", "a")
	kv1 := logRec("unit-kv-1", "DEBUG", "unit.kv/1.juju-log", "b")
	kvstore0 := logRec("unit-kvstore-0", "INFO", "unit.kvstore/0.juju-log", "c")
	m0 := logRec("machine-0", "ERROR", "juju.worker.uniter.operation", "d")
	lxd := logRec("machine-0-lxd-1", "INFO", "juju.worker", "e")
	all := []*api.LogRecord{kv0, kv1, kvstore0, m0, lxd}
	for _, tc := range []struct {
		name string
		f    logFilter
		want []*api.LogRecord
	}{
		{"none", logFilter{}, all},
		{"unit name", logFilter{include: entityPatterns([]string{"kv/0"})}, []*api.LogRecord{kv0}},
		{"unit tag", logFilter{include: entityPatterns([]string{"unit-kv-1"})}, []*api.LogRecord{kv1}},
		{"application", logFilter{include: entityPatterns([]string{"kv"})}, []*api.LogRecord{kv0, kv1}},
		{"glob", logFilter{include: entityPatterns([]string{"kv*/0"})}, []*api.LogRecord{kv0, kvstore0}},
		{"machine", logFilter{include: entityPatterns([]string{"0"})}, []*api.LogRecord{m0}},
		{"container", logFilter{include: entityPatterns([]string{"0/lxd/1"})}, []*api.LogRecord{lxd}},
		{"exclude", logFilter{exclude: entityPatterns([]string{"kv", "machine-0"})}, []*api.LogRecord{kvstore0, lxd}},
		{"level", logFilter{level: "INFO"}, []*api.LogRecord{kv0, kvstore0, m0, lxd}},
		{"level error", logFilter{level: "ERROR"}, []*api.LogRecord{m0}},
		{"module prefix", logFilter{includeModule: []string{"juju.worker"}}, []*api.LogRecord{m0, lxd}},
		{"module not a prefix of a name", logFilter{includeModule: []string{"juju.work"}}, nil},
		{"exclude module", logFilter{excludeModule: []string{"juju"}}, []*api.LogRecord{kv0, kv1, kvstore0}},
		{"combined", logFilter{include: entityPatterns([]string{"kv"}), level: "INFO"}, []*api.LogRecord{kv0}},
	} {
		var got []*api.LogRecord
		for _, r := range all {
			if tc.f.wanted(r) {
				got = append(got, r)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %d records, want %d", tc.name, len(got), len(tc.want))
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: record %d is %s, want %s", tc.name, i, got[i].Entity, tc.want[i].Entity)
			}
		}
	}
}

func TestParseLevel(t *testing.T) {
	if l, err := parseLevel("warn"); err != nil || l != "WARNING" {
		t.Fatalf("warn: %q %v", l, err)
	}
	if _, err := parseLevel("loud"); err == nil {
		t.Fatal("loud accepted")
	}
}
