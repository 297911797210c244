package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/bench/internal/load"
)

func TestPrintTableRatio(t *testing.T) {
	var b strings.Builder
	err := printTable(&b, []load.Result{
		{Target: "etcd", Concurrency: 64, CommitsPerSec: 5000, P50: time.Millisecond},
		{Target: "drover", Concurrency: 64, CommitsPerSec: 7500, P50: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "vs etcd") || !strings.Contains(b.String(), "1.50x") {
		t.Fatalf("table lacks the drover/etcd ratio:\n%s", b.String())
	}

	b.Reset()
	if err := printTable(&b, []load.Result{{Target: "etcd", Concurrency: 1, CommitsPerSec: 900}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "vs etcd") {
		t.Fatalf("etcd-only table has a ratio column:\n%s", b.String())
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-levels", "1, 512", "-targets", "etcd,drover", "-duration", "3s"})
	if err != nil {
		t.Fatal(err)
	}
	if o.drover != "bin/droverd" || len(o.levels) != 2 || o.levels[1] != 512 || o.keyspace < 512 || len(o.targets) != 2 || o.duration != 3*time.Second {
		t.Fatalf("options = %+v", o)
	}
	if _, err := parseFlags([]string{"-levels", "0"}); err == nil {
		t.Fatal("level 0 accepted")
	}
}

func TestUnknownTarget(t *testing.T) {
	err := run(context.Background(), []string{"-targets", "nope"}, &strings.Builder{})
	if !errors.Is(err, ErrUnknownTarget) {
		t.Fatalf("err = %v", err)
	}
}
