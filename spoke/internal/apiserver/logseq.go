package apiserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Sequence numbers are reserved on disk in blocks, so a node never hands
// out a number twice, even when it dies before the records it numbered
// reached their files (they are appended without fsync): before a number
// beyond the reservation is handed out, the seq file is rewritten (and
// synced) to reserve the next seqBlock numbers, and a restarted node
// continues after both its records and its reservation. A restart skips at
// most a block; clients resume with "after N" and do not mind gaps.

// seqFileName holds, in the logs directory, the highest sequence number the
// node may have handed out. It is never taken for a model's file: it does
// not end in ".log", and a model key starting with "." names no file.
const seqFileName = ".seq"

// seqBlock is how many sequence numbers one write of the seq file reserves.
const seqBlock = 1024

// maxReserved bounds a credible reservation; a larger one is taken as
// corrupt rather than let the numbers wrap around.
const maxReserved = 1 << 62

// readReserved is the reservation the seq file holds, or 0 (with a warning
// if the file is there but unreadable): numbers then continue after the
// records on disk.
func (d *logFiles) readReserved() uint64 {
	path := filepath.Join(d.dir, seqFileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	var h uint64
	if err == nil {
		h, err = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		if err == nil && h > maxReserved {
			err = fmt.Errorf("reservation %d out of range", h)
		}
	}
	if err != nil {
		d.log.Warn("debug-log sequence reservation unreadable, continuing after the records on disk", "file", path, "err", err)
		return 0
	}
	return h
}

// reserve makes sure seq is reserved on disk before it is handed out. A
// failed write is logged and the block counted as reserved all the same
// (one warning a block): numbers then continue in memory only, and a crash
// before the next good write may hand some out again.
func (d *logFiles) reserve(seq uint64) {
	if seq <= d.reserved {
		return
	}
	d.reserved = seq + seqBlock - 1
	if err := writeReserved(d.dir, d.reserved); err != nil {
		d.log.Warn("debug-log sequence numbers not reserved on disk", "dir", d.dir, "err", err)
	}
}

// writeReserved replaces dir's seq file with h, atomically and durably:
// a temporary file, synced, renamed over it, and the directory synced.
func writeReserved(dir string, h uint64) error {
	path := filepath.Join(dir, seqFileName)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	_, err = f.WriteString(strconv.FormatUint(h, 10) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	df, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	err = df.Sync()
	if cerr := df.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
