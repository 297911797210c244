package apiserver

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// logBookBound is the byte bound a model's debug-log ring is held to.
const logBookBound = 8 << 20

// ringBytes is what the records hold: their text fields.
func ringBytes(recs []api.LogRecord) int {
	n := 0
	for _, r := range recs {
		n += len(r.Entity) + len(r.Level) + len(r.Module) + len(r.Message)
	}
	return n
}

// TestLogBookBoundedInBytes (issue 26, finding 10): a model's debug-log
// ring is bounded in bytes, not only in records: records far over the
// bound evict the oldest, a record too large on its own is truncated with
// a marker, and what a restarted node loads and what its file holds stay
// bounded too.
func TestLogBookBoundedInBytes(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	b := newLogBook(DefaultLogLines, dir, log)
	huge := strings.Repeat("x", 1<<20)
	for i := range 40 {
		b.append("model-a", api.LogRecord{Entity: "unit-a-0", Time: time.Unix(int64(i), 0).UTC(), Level: "INFO", Message: huge})
	}
	b.append("model-a", api.LogRecord{Entity: "unit-a-0", Level: "INFO", Message: "last"})
	recs, _ := b.since("model-a", 0)
	if n := ringBytes(recs); n > logBookBound {
		t.Fatalf("the ring holds %d bytes in %d records after 40 MiB were logged, want at most %d", n, len(recs), logBookBound)
	}
	if len(recs) < 2 || recs[len(recs)-1].Message != "last" {
		t.Fatalf("the newest records are not kept: %d records", len(recs))
	}
	big := recs[len(recs)-2]
	if len(big.Message) >= len(huge) || !strings.HasSuffix(big.Message, "[truncated]") {
		t.Fatalf("a 1 MiB record is kept whole (%d bytes) or without its marker", len(big.Message))
	}
	b.close()

	fi, err := os.Stat(filepath.Join(dir, "model-a.log"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 3*logBookBound {
		t.Fatalf("the model's file holds %d bytes, want at most %d", fi.Size(), 3*logBookBound)
	}
	b = newLogBook(DefaultLogLines, dir, log)
	defer b.close()
	recs, _ = b.since("model-a", 0)
	if n := ringBytes(recs); n > logBookBound || len(recs) == 0 || recs[len(recs)-1].Message != "last" {
		t.Fatalf("after a restart the ring holds %d bytes in %d records, want at most %d ending with the newest", n, len(recs), logBookBound)
	}
}
