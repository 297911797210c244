package charm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
)

// ExpandArchive safely unpacks .charm archive bytes into dest with default
// limits. See ExpandArchiveLimits.
func ExpandArchive(data []byte, dest string) error {
	return ExpandArchiveLimits(data, dest, Limits{})
}

// ExpandArchiveLimits unpacks an archive into dest, creating it if needed,
// preserving executable bits and symlinks. The archive is checked in full
// before anything is written, and must contain metadata.yaml because the
// agent runs nothing without it (CHARM-CONTRACT §1.6). Files already in dest that the archive does
// not mention are kept, because a charm upgrade must preserve files the
// charm created (CHARM-CONTRACT §1.1); files the archive does mention are
// replaced, and an existing symlink is replaced rather than written through.
// All writes go through an os.Root, so nothing can land outside dest even
// if dest already contains hostile symlinks.
func ExpandArchiveLimits(data []byte, dest string, lim Limits) error {
	lim = lim.withDefaults()
	ca, err := openExpandable(data, lim)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return err
	}
	defer root.Close()
	budget := lim.MaxSize
	// Symlinks go last so that no file is ever written through one.
	for _, wantLinks := range []bool{false, true} {
		for _, e := range ca.entries {
			if (e.mode&fs.ModeSymlink != 0) != wantLinks {
				continue
			}
			if err := expandEntry(root, e, &budget); err != nil {
				return fmt.Errorf("expanding %s: %w", e.name, err)
			}
		}
	}
	return nil
}

// openExpandable applies every check expansion needs before anything is
// written.
func openExpandable(data []byte, lim Limits) (*checkedArchive, error) {
	if int64(len(data)) > lim.MaxSize {
		return nil, invalid(archiveFile, "", "archive is %d bytes, limit is %d", len(data), lim.MaxSize)
	}
	ca, err := openArchive(bytes.NewReader(data), int64(len(data)), lim)
	if err != nil {
		return nil, err
	}
	if e, ok := ca.byName[MetadataFile]; !ok || !e.mode.IsRegular() {
		return nil, invalid(MetadataFile, "", "missing from archive or not a regular file")
	}
	return ca, nil
}

// ArchiveEntry is one path that expanding an archive puts in place: a file
// or symlink, or a directory (Dir), whether the archive names the
// directory or it is only created for the entries below it.
type ArchiveEntry struct {
	Name string // slash-separated, relative to the charm root, clean
	Dir  bool
}

// ArchiveEntries lists with default limits what ExpandArchive would put in
// place. See ArchiveEntriesLimits.
func ArchiveEntries(data []byte) ([]ArchiveEntry, error) {
	return ArchiveEntriesLimits(data, Limits{})
}

// ArchiveEntriesLimits lists, sorted by name, every path that
// ExpandArchiveLimits creates or replaces for the archive: its entries plus
// the directories created implicitly above them. A deployer records the
// list so that an upgrade can remove what the old charm put in place and
// the new one no longer has, without touching files the charm created
// (CHARM-CONTRACT §1.1). The archive passes the same checks as for
// expansion, so a listed archive can be expanded and the other way round.
func ArchiveEntriesLimits(data []byte, lim Limits) ([]ArchiveEntry, error) {
	ca, err := openExpandable(data, lim.withDefaults())
	if err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	out := make([]ArchiveEntry, 0, len(ca.entries))
	for _, e := range ca.entries {
		if e.mode.IsDir() {
			dirs[e.name] = true
		} else {
			out = append(out, ArchiveEntry{Name: e.name})
		}
		for dir := path.Dir(e.name); dir != "."; dir = path.Dir(dir) {
			dirs[dir] = true
		}
	}
	for dir := range dirs {
		out = append(out, ArchiveEntry{Name: dir, Dir: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// perm keeps only permission bits: a charm has no business installing
// setuid or sticky files on the machine it runs on.
func perm(m fs.FileMode) fs.FileMode { return m.Perm() }

func expandEntry(root *os.Root, e entry, budget *int64) error {
	if dir := path.Dir(e.name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	switch {
	case e.mode.IsDir():
		if err := root.MkdirAll(e.name, 0o755); err != nil {
			return err
		}
		return root.Chmod(e.name, perm(e.mode)|0o700)
	case e.mode&fs.ModeSymlink != 0:
		if err := removeNonDir(root, e.name); err != nil {
			return err
		}
		return root.Symlink(e.target, e.name)
	}
	if err := removeNonDir(root, e.name); err != nil {
		return err
	}
	f, err := root.OpenFile(e.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	rc, err := e.file.Open()
	if err != nil {
		f.Close()
		return invalid(archiveFile, "", "entry %q: %v", e.name, err)
	}
	// Count real bytes: the header's size is only a claim.
	n, err := io.Copy(f, io.LimitReader(rc, *budget+1))
	rc.Close()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if *budget -= n; *budget < 0 {
		return invalid(archiveFile, "", "uncompressed size exceeds limit")
	}
	return root.Chmod(e.name, perm(e.mode))
}

// removeNonDir clears the way for a new file or symlink. A directory in the
// way is an error rather than something to delete recursively: it may hold
// state the charm created.
func removeNonDir(root *os.Root, name string) error {
	st, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("a directory is in the way")
	}
	return root.Remove(name)
}
