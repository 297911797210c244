package apiserver

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

// crashLoseTail simulates a node killed before the last records it
// numbered reached the model's file (appends are not synced): the file
// keeps only its first n lines.
func crashLoseTail(t *testing.T, path string, n int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) < n {
		t.Fatalf("%s has %d lines, want at least %d", path, len(lines), n)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines[:n], "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readSeqFile(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, seqFileName))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// TestLogSeqNotReusedAfterLostWrites: numbers handed out to followers whose
// records never reached the file are not handed out again after a restart,
// so a client resuming after the last number it saw gets the new records.
func TestLogSeqNotReusedAfterLostWrites(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	b := newLogBook(100, dir, log)
	for i := 1; i <= 5; i++ {
		b.append("model-a", api.LogRecord{Message: fmt.Sprint("a", i)})
	}
	recs, _ := b.since("model-a", 0) // a live follower sees 1..5
	seen := recs[len(recs)-1].Seq
	b.close()
	crashLoseTail(t, filepath.Join(dir, "model-a.log"), 2)

	b = newLogBook(100, dir, log)
	defer b.close()
	if recs, _ := b.since("model-a", 0); messages(recs) != "1:a1 2:a2" {
		t.Fatalf("after the crash the file holds %q, want the first two records", messages(recs))
	}
	b.append("model-a", api.LogRecord{Message: "after"})
	recs, _ = b.since("model-a", seen)
	if len(recs) != 1 || recs[0].Message != "after" || recs[0].Seq <= seen {
		t.Fatalf("resuming after %d gives %q: a number was handed out twice", seen, messages(recs))
	}
}

// TestLogSeqReservedInBlocks: the seq file is rewritten once a block, not
// once a record, and always covers every number handed out.
func TestLogSeqReservedInBlocks(t *testing.T) {
	dir := t.TempDir()
	b := newLogBook(3, dir, slog.New(slog.DiscardHandler))
	defer b.close()
	b.append("model-a", api.LogRecord{Message: "first"})
	if got := readSeqFile(t, dir); got != fmt.Sprint(seqBlock) {
		t.Fatalf("seq file after the first record: %q, want %d", got, seqBlock)
	}
	before, err := os.Stat(filepath.Join(dir, seqFileName))
	if err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= seqBlock; i++ {
		b.append("model-a", api.LogRecord{Message: fmt.Sprint(i)})
	}
	after, err := os.Stat(filepath.Join(dir, seqFileName))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatalf("seq file rewritten within a block (%d records)", seqBlock)
	}
	b.append("model-a", api.LogRecord{Message: "next block"})
	if got := readSeqFile(t, dir); got != fmt.Sprint(2*seqBlock) {
		t.Fatalf("seq file after record %d: %q, want %d", seqBlock+1, got, 2*seqBlock)
	}
	if _, err := os.Stat(filepath.Join(dir, seqFileName+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("temporary seq file left behind: %v", err)
	}
}

// TestLogSeqFileNotAModel: the seq file, its temporary and dot files are
// not loaded as models' records; the reservation sets the next number.
func TestLogSeqFileNotAModel(t *testing.T) {
	dir := t.TempDir()
	recs := []api.LogRecord{{Seq: 1, Message: "a1"}, {Seq: 2, Message: "a2"}, {Seq: 3, Message: "a3"}}
	if err := writeRecords(filepath.Join(dir, "model-a.log"), recs); err != nil {
		t.Fatal(err)
	}
	if err := writeRecords(filepath.Join(dir, ".hidden.log"), []api.LogRecord{{Seq: 9, Message: "dot"}}); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{seqFileName: "100\n", seqFileName + ".tmp": "7"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b := newLogBook(100, dir, slog.New(slog.DiscardHandler))
	defer b.close()
	if len(b.models) != 1 || messages(b.models["model-a"]) != "1:a1 2:a2 3:a3" {
		t.Fatalf("loaded models: %v, want model-a alone", b.models)
	}
	b.append("model-a", api.LogRecord{Message: "next"})
	if recs, _ := b.since("model-a", 3); messages(recs) != "101:next" {
		t.Fatalf("after a reservation of 100: %q, want 101:next", messages(recs))
	}
}

// TestLogSeqFileFallback: a missing, corrupt or stale seq file leaves the
// records on disk to set the next number; a corrupt one is reported.
func TestLogSeqFileFallback(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  *string // nil: no file
		warn bool
	}{
		{"missing", nil, false},
		{"garbage", new("not a number"), true},
		{"empty", new(""), true},
		{"out of range", new("18446744073709551615"), true},
		{"below the records", new("2\n"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			recs := []api.LogRecord{{Seq: 5, Message: "a5"}, {Seq: 6, Message: "a6"}}
			if err := writeRecords(filepath.Join(dir, "model-a.log"), recs); err != nil {
				t.Fatal(err)
			}
			if tc.seq != nil {
				if err := os.WriteFile(filepath.Join(dir, seqFileName), []byte(*tc.seq), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			b := newLogBook(100, dir, slog.New(slog.NewTextHandler(&out, nil)))
			defer b.close()
			if warned := strings.Contains(out.String(), "level=WARN"); warned != tc.warn {
				t.Fatalf("warned %v, want %v:\n%s", warned, tc.warn, out.String())
			}
			b.append("model-a", api.LogRecord{Message: "next"})
			if recs, _ := b.since("model-a", 6); messages(recs) != "7:next" {
				t.Fatalf("next record: %q, want 7:next", messages(recs))
			}
			if got := readSeqFile(t, dir); got != fmt.Sprint(6+seqBlock) {
				t.Fatalf("seq file rewritten as %q, want %d", got, 6+seqBlock)
			}
		})
	}
}

// TestLogSeqReserveFails: a seq file that cannot be written is reported,
// and records are still numbered, kept and written to the model's file.
func TestLogSeqReserveFails(t *testing.T) {
	dir := t.TempDir()
	// A directory where the seq file goes: it can be neither read nor
	// replaced.
	if err := os.MkdirAll(filepath.Join(dir, seqFileName, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	b := newLogBook(100, dir, slog.New(slog.NewTextHandler(&out, nil)))
	defer b.close()
	out.Reset()
	b.append("model-a", api.LogRecord{Message: "a1"})
	b.append("model-a", api.LogRecord{Message: "a2"})
	if n := strings.Count(out.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d warnings for a seq file that cannot be written, want 1:\n%s", n, out.String())
	}
	if recs, _ := b.since("model-a", 0); messages(recs) != "1:a1 2:a2" {
		t.Fatalf("records served: %q", messages(recs))
	}
	data, err := os.ReadFile(filepath.Join(dir, "model-a.log"))
	if err != nil || strings.Count(string(data), "\n") != 2 {
		t.Fatalf("model-a.log: %q, %v; want both records", data, err)
	}
}
