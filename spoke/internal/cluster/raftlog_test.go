package cluster

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
)

func TestRaftLines(t *testing.T) {
	for _, c := range []struct {
		line  string
		level slog.Level
		msg   string
	}{
		{"2026-11-22T10:57:57.948Z [WARN]  raft: heartbeat timeout reached, starting election: last-leader-addr= last-leader-id=",
			slog.LevelInfo, "heartbeat timeout reached, starting election: last-leader-addr= last-leader-id="},
		{"2026-11-22T10:57:57.948Z [WARN]  raft: heartbeat timeout reached, starting election: last-leader-addr=127.0.0.1:17071 last-leader-id=node-1",
			slog.LevelWarn, "heartbeat timeout reached, starting election: last-leader-addr=127.0.0.1:17071 last-leader-id=node-1"},
		{"2026-11-22T10:57:58.001Z [ERROR] raft: failed to appendEntries to: peer=\"{Voter node-2 127.0.0.1:17073}\" error=EOF",
			slog.LevelError, "failed to appendEntries to: peer=\"{Voter node-2 127.0.0.1:17073}\" error=EOF"},
		{"no level tag at all", slog.LevelWarn, "no level tag at all"},
	} {
		level, msg := raftLine(c.line)
		if level != c.level || msg != c.msg {
			t.Errorf("raftLine(%q) = %v %q, want %v %q", c.line, level, msg, c.level, c.msg)
		}
	}
}

// TestSlogWriterOneRecordPerLine: what hclog writes at once becomes one
// record per line, each at its level, tagged as raft's.
func TestSlogWriterOneRecordPerLine(t *testing.T) {
	var buf bytes.Buffer
	w := slogWriter{slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	in := "2026-11-22T10:57:58.001Z [ERROR] raft: one\n2026-11-22T10:57:58.002Z [WARN]  raft: two\n"
	if n, err := w.Write([]byte(in)); n != len(in) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	var got []string
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var r struct{ Level, Msg, Component string }
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Level+" "+r.Msg+" "+r.Component)
	}
	if want := []string{"ERROR one raft", "WARN two raft"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("records %q, want %q", got, want)
	}
}
