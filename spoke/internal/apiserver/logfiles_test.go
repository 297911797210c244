package apiserver

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

func messages(recs []api.LogRecord) string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%d:%s", r.Seq, r.Message))
	}
	return strings.Join(out, " ")
}

// TestLogBookOnDisk: a node's debug-log records outlive a restart (the
// newest a model keeps, with their sequence numbers, which then continue),
// the files stay bounded, and a torn last line is skipped.
func TestLogBookOnDisk(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	b := newLogBook(3, dir, log)
	for i := 1; i <= 5; i++ {
		b.append("model-a", api.LogRecord{Entity: "unit-a-0", Time: time.Unix(int64(i), 0).UTC(), Level: "INFO", Message: fmt.Sprint("a", i)})
	}
	b.append("model-b", api.LogRecord{Entity: "unit-b-0", Level: "INFO", Message: "b1"})
	b.append("../escape", api.LogRecord{Message: "not a file name"})
	b.close()

	b = newLogBook(3, dir, log)
	recs, _ := b.since("model-a", 0)
	if got := messages(recs); got != "3:a3 4:a4 5:a5" {
		t.Fatalf("model-a after a restart: %q, want the newest three with their sequence numbers", got)
	}
	if !recs[0].Time.Equal(time.Unix(3, 0)) || recs[0].Entity != "unit-a-0" || recs[0].Level != "INFO" {
		t.Fatalf("a record lost fields on disk: %+v", recs[0])
	}
	if recs, _ := b.since("model-b", 0); messages(recs) != "6:b1" {
		t.Fatalf("model-b after a restart: %q", messages(recs))
	}
	b.append("model-b", api.LogRecord{Message: "b2"})
	// ../escape's 7 was never written, but was handed out: numbers continue
	// after the reservation (logseq_test.go).
	if recs, _ := b.since("model-b", 6); len(recs) != 1 || recs[0].Message != "b2" || recs[0].Seq <= 7 {
		t.Fatalf("sequence numbers do not continue after a restart: %q", messages(recs))
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Fatalf("a model key escaped the log directory: %v", entries)
	}

	// Bounded: many more records than a model keeps leave at most twice that
	// on disk, the newest.
	for i := range 20 {
		b.append("model-a", api.LogRecord{Message: fmt.Sprint("more", i)})
	}
	b.close()
	data, err := os.ReadFile(filepath.Join(dir, "model-a.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 6 || !strings.Contains(string(data), `"more19"`) {
		t.Fatalf("model-a.log holds %d lines (want at most 6, the newest last):\n%s", n, data)
	}

	// A node that died while writing a record leaves a torn line.
	f, err := os.OpenFile(filepath.Join(dir, "model-a.log"), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":99,"entity":"unit-a-0","mess`)
	f.Close()
	b = newLogBook(3, dir, log)
	defer b.close()
	recs, _ = b.since("model-a", 0)
	if len(recs) != 3 || recs[2].Message != "more19" {
		t.Fatalf("after a torn line: %q", messages(recs))
	}
	b.append("model-a", api.LogRecord{Message: "after"})
	b.close()
	b = newLogBook(3, dir, log)
	if recs, _ := b.since("model-a", 0); len(recs) != 3 || recs[2].Message != "after" {
		t.Fatalf("a record appended after a torn line, read back: %q", messages(recs))
	}
}
