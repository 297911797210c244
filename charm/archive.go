package charm

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// archiveFile names the archive in errors that are not about one entry.
const archiveFile = "archive"

// Limits bound what an archive may contain. The zero value of a field means
// the default.
type Limits struct {
	// MaxSize bounds both the archive itself and the total uncompressed
	// size of its entries.
	MaxSize int64
	// MaxFiles bounds the number of entries.
	MaxFiles int
}

// Default limits: a Python charm with a vendored venv is tens of MiB and a
// few thousand files, so these leave ample room while stopping zip bombs.
const (
	DefaultMaxSize  = 256 << 20
	DefaultMaxFiles = 100_000
	// maxLinkTarget bounds a symlink entry's content (its target path).
	maxLinkTarget = 4096
)

func (l Limits) withDefaults() Limits {
	if l.MaxSize <= 0 {
		l.MaxSize = DefaultMaxSize
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	return l
}

// entry is one checked archive member.
type entry struct {
	name   string // cleaned, without trailing slash
	file   *zip.File
	mode   fs.FileMode
	target string // symlink target
}

// checkedArchive is an archive whose entries all passed the safety rules.
type checkedArchive struct {
	entries []entry // sorted by name
	byName  map[string]*entry
}

// ReadArchive loads a charm from a .charm zip archive with default limits.
func ReadArchive(r io.ReaderAt, size int64) (*Charm, error) {
	return ReadArchiveLimits(r, size, Limits{})
}

// ReadArchiveLimits loads a charm from a .charm zip archive. Every entry is
// checked for safety even though only the descriptor files are read, so an
// archive accepted here can later be expanded.
func ReadArchiveLimits(r io.ReaderAt, size int64, lim Limits) (*Charm, error) {
	lim = lim.withDefaults()
	if size > lim.MaxSize {
		return nil, invalid(archiveFile, "", "archive is %d bytes, limit is %d", size, lim.MaxSize)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
		return nil, err
	}
	ca, err := openArchive(r, size, lim)
	if err != nil {
		return nil, err
	}
	c, err := load(ca.read)
	if err != nil {
		return nil, err
	}
	c.SHA256 = hex.EncodeToString(h.Sum(nil))
	c.Size = size
	return c, nil
}

// openArchive parses the zip directory and applies every per-entry rule.
func openArchive(r io.ReaderAt, size int64, lim Limits) (ca *checkedArchive, err error) {
	// archive/zip is robust, but the no-panic promise must not depend on it.
	defer func() {
		if rec := recover(); rec != nil {
			ca, err = nil, invalid(archiveFile, "", "corrupt archive: %v", rec)
		}
	}()
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, invalid(archiveFile, "", "not a zip archive: %v", err)
	}
	if len(zr.File) > lim.MaxFiles {
		return nil, invalid(archiveFile, "", "archive has %d entries, limit is %d", len(zr.File), lim.MaxFiles)
	}
	p := &problems{file: archiveFile}
	ca = &checkedArchive{byName: make(map[string]*entry, len(zr.File))}
	var total uint64
	for _, f := range zr.File {
		// Compare before adding so a hostile header cannot wrap the sum.
		if f.UncompressedSize64 > uint64(lim.MaxSize)-total {
			return nil, invalid(archiveFile, "", "uncompressed size exceeds limit of %d bytes", lim.MaxSize)
		}
		total += f.UncompressedSize64
		e, err := checkEntry(f)
		if err != nil {
			p.merge(err)
			continue
		}
		if _, dup := ca.byName[e.name]; dup {
			p.add(e.name, "duplicate entry")
			continue
		}
		ca.entries = append(ca.entries, e)
		ca.byName[e.name] = &ca.entries[len(ca.entries)-1]
	}
	if !p.ok() {
		return nil, p.err()
	}
	sort.Slice(ca.entries, func(i, j int) bool { return ca.entries[i].name < ca.entries[j].name })
	for i := range ca.entries {
		ca.byName[ca.entries[i].name] = &ca.entries[i]
	}
	for _, e := range ca.entries {
		// With no entry below a symlink, every entry's real location is its
		// lexical one, which makes the lexical symlink-target check sound.
		// An entry below a regular file could never be expanded, and would
		// make one path both a file and a directory.
		for dir := path.Dir(e.name); dir != "."; dir = path.Dir(dir) {
			if parent, ok := ca.byName[dir]; ok && parent.mode&fs.ModeSymlink != 0 {
				p.add(e.name, "entry below symlink %q", dir)
				break
			} else if ok && !parent.mode.IsDir() {
				p.add(e.name, "entry below file %q", dir)
				break
			}
		}
	}
	if !p.ok() {
		return nil, p.err()
	}
	return ca, nil
}

// checkEntry validates one zip member's name, type and symlink target.
func checkEntry(f *zip.File) (entry, error) {
	name := strings.TrimSuffix(f.Name, "/")
	bad := func(msg string) (entry, error) { return entry{}, invalid(archiveFile, "", "entry %q: %s", f.Name, msg) }
	switch {
	case name == "" || name == ".":
		return bad("empty name")
	case strings.ContainsAny(name, "\\\x00"):
		return bad("name contains a backslash or NUL")
	case strings.HasPrefix(name, "/"):
		return bad("absolute path")
	case path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../"):
		return bad("path is not clean or escapes the charm")
	}
	mode := f.Mode()
	e := entry{name: name, file: f, mode: mode}
	switch {
	case mode.IsDir(), mode.IsRegular():
		if strings.HasSuffix(f.Name, "/") && !mode.IsDir() {
			return bad("name ends in / but entry is not a directory")
		}
	case mode&fs.ModeSymlink != 0:
		if f.UncompressedSize64 > maxLinkTarget {
			return bad("symlink target too long")
		}
		target, err := readEntry(f, maxLinkTarget)
		if err != nil {
			return bad("cannot read symlink target: " + err.Error())
		}
		e.target = string(target)
		if err := checkLinkTarget(name, e.target); err != "" {
			return bad(err)
		}
	default:
		return bad("unsupported file type " + mode.Type().String())
	}
	return e, nil
}

// checkLinkTarget returns why a symlink at name pointing to target is
// unsafe, or "" if it stays inside the charm.
func checkLinkTarget(name, target string) string {
	switch {
	case target == "":
		return "empty symlink target"
	case strings.ContainsAny(target, "\\\x00"):
		return "symlink target contains a backslash or NUL"
	case path.IsAbs(target):
		return "symlink target " + target + " is absolute"
	}
	resolved := path.Join(path.Dir(name), target)
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return "symlink target " + target + " points outside the charm"
	}
	return ""
}

// readEntry reads a member, refusing more than limit bytes regardless of
// what the header claims.
func readEntry(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errors.New("entry larger than its limit")
	}
	return data, nil
}

// read serves descriptor files to load. Only regular files count: a
// metadata.yaml symlink would make the charm's identity depend on another
// file, which charmcraft never produces.
func (ca *checkedArchive) read(name string) ([]byte, bool, error) {
	e, ok := ca.byName[name]
	if !ok {
		return nil, false, nil
	}
	if !e.mode.IsRegular() {
		return nil, false, invalid(name, "", "not a regular file in the archive")
	}
	data, err := readEntry(e.file, maxYAMLSize)
	if err != nil {
		return nil, false, invalid(name, "", "cannot read from archive: %v", err)
	}
	return data, true, nil
}
