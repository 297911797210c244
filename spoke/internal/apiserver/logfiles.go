package apiserver

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/droverhq/drover/api"
)

// logFiles keeps a node's debug-log records on disk, so a restarted node
// still shows what its agents logged before (Juju keeps them in its
// database): one file of JSON lines per model in dir, appended as records
// arrive. A file that holds twice the records or twice the bytes a model
// keeps is rewritten with the newest ones. A torn last line (the node died while writing it)
// is skipped when the file is read. Sequence numbers are reserved on disk
// in blocks (logseq.go), so none is handed out twice across a crash.
type logFiles struct {
	dir   string
	log   *slog.Logger
	files map[string]*logFile
	// reserved is the highest sequence number reserved on disk (or meant
	// to be, when the write failed): numbers up to it may be handed out.
	reserved uint64
}

type logFile struct {
	f     *os.File
	lines int
	bytes int64
}

// modelFileName is the file of a model's records, or "" for a model key
// that cannot name a file (keys are UUIDs).
func (d *logFiles) modelFileName(model string) string {
	if model == "" || strings.ContainsAny(model, `/\`) || strings.HasPrefix(model, ".") {
		return ""
	}
	return filepath.Join(d.dir, model+".log")
}

// load reads every model's records, keeping the newest keep of each within
// keepBytes, and the sequence number to continue after: the highest of the
// records and of the reservation, as numbers up to it may have been handed
// out.
func (d *logFiles) load(keep, keepBytes int) (map[string][]api.LogRecord, uint64) {
	out := map[string][]api.LogRecord{}
	seq := d.readReserved()
	paths, _ := filepath.Glob(filepath.Join(d.dir, "*.log"))
	for _, path := range paths {
		model := strings.TrimSuffix(filepath.Base(path), ".log")
		if d.modelFileName(model) == "" {
			continue // not a model's file (".x.log")
		}
		f, err := os.Open(path)
		if err != nil {
			d.log.Warn("debug-log file unreadable", "file", path, "err", err)
			continue
		}
		var recs []api.LogRecord
		size := 0
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var rec api.LogRecord
			if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Seq == 0 {
				continue // a torn or foreign line
			}
			rec = boundRecord(rec)
			recs = append(recs, rec)
			size += recordSize(rec)
			seq = max(seq, rec.Seq)
			if len(recs) > 2*keep || size > 2*keepBytes {
				drop, remain := keepNewest(recs, size, keep, keepBytes)
				recs, size = slices.Clone(recs[drop:]), remain
			}
		}
		f.Close()
		drop, _ := keepNewest(recs, size, keep, keepBytes)
		out[model] = slices.Clone(recs[drop:])
	}
	d.reserved = seq
	return out, seq
}

// append writes rec to the model's file; ring is what the model keeps
// (rec last), written alone when the file is compacted. Failures are
// logged: debug-log on disk is best effort, the records stay in memory.
func (d *logFiles) append(model string, rec api.LogRecord, ring []api.LogRecord, keep, keepBytes int) {
	path := d.modelFileName(model)
	if path == "" {
		return
	}
	lf := d.files[model]
	if lf != nil && (lf.lines >= 2*keep || lf.bytes >= 2*int64(keepBytes)) {
		// Compact: the newest records (ring, which ends with rec) replace
		// the file.
		lf.f.Close()
		delete(d.files, model)
		if err := writeRecords(path, ring); err != nil {
			d.log.Warn("debug-log file not compacted", "file", path, "err", err)
		}
		d.open(model, path, len(ring))
		return
	}
	if lf == nil {
		if lf = d.open(model, path, 0); lf == nil {
			return
		}
	}
	line, _ := json.Marshal(rec)
	if _, err := lf.f.Write(append(line, '\n')); err != nil {
		d.log.Warn("debug-log record not written", "file", path, "err", err)
		return
	}
	lf.lines++
	lf.bytes += int64(len(line)) + 1
}

// maxOpenLogFiles bounds the files kept open; beyond it they are all
// closed and reopened as records come (a node with many models).
const maxOpenLogFiles = 256

// open opens path for appending, counting lines as what it already holds
// (the count is only a compaction trigger).
func (d *logFiles) open(model, path string, lines int) *logFile {
	if len(d.files) >= maxOpenLogFiles {
		d.close()
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		d.log.Warn("debug-log file not opened", "file", path, "err", err)
		return nil
	}
	var size int64
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		size = fi.Size()
		if lines == 0 {
			lines = countLines(path)
		}
		// A torn last line (the node died while writing it) is ended, so
		// the next record starts a line of its own.
		last := make([]byte, 1)
		if r, err := os.Open(path); err == nil {
			if _, err := r.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
				f.Write([]byte{'\n'})
			}
			r.Close()
		}
	}
	lf := &logFile{f: f, lines: lines, bytes: size}
	d.files[model] = lf
	return lf
}

func (d *logFiles) close() {
	for _, lf := range d.files {
		lf.f.Close()
	}
	d.files = map[string]*logFile{}
}

func countLines(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(data), "\n")
}

// writeRecords replaces path with recs, atomically.
func writeRecords(path string, recs []api.LogRecord) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, r := range recs {
		line, _ := json.Marshal(r)
		w.Write(append(line, '\n'))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
