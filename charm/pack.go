package charm

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// packItem is one entry to write, from disk or generated.
type packItem struct {
	name   string
	mode   fs.FileMode
	path   string // on disk, for regular files
	target string // for symlinks
	data   []byte // for generated files
}

// ArchiveDir validates the charm in dir and writes it to w as a .charm zip.
// Entries are sorted and timestamps fixed, so the output depends only on
// the tree's contents. Executable bits and symlinks are preserved; symlinks
// must stay inside the charm. For a charmcraft source tree, metadata.yaml,
// config.yaml and actions.yaml are generated as charmcraft pack would,
// unless the tree already has them.
func ArchiveDir(dir string, w io.Writer) error {
	c, err := ReadDir(dir)
	if err != nil {
		return err
	}
	items, err := collect(dir)
	if err != nil {
		return err
	}
	// Generate whichever descriptor files the charm took from charmcraft.yaml,
	// because the agent reads only metadata.yaml, config.yaml and actions.yaml.
	if data, found, err := readLimited(filepath.Join(dir, CharmcraftFile), CharmcraftFile); err != nil {
		return err
	} else if found {
		proj, err := parseCharmcraft(data, c.FromCharmcraft)
		if err != nil {
			return err
		}
		gen, err := proj.generated()
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, it := range items {
			have[it.name] = true
		}
		for name, data := range gen {
			if !have[name] {
				items = append(items, packItem{name: name, mode: 0o644, data: data})
			}
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].name < items[j].name })
	var total int64
	for _, it := range items {
		total += int64(len(it.data))
	}
	zw := zip.NewWriter(w)
	for _, it := range items {
		if err := writeItem(zw, it, &total); err != nil {
			return fmt.Errorf("packing %s: %w", it.name, err)
		}
	}
	return zw.Close()
}

// collect walks dir in lexical order and checks every entry.
func collect(dir string) ([]packItem, error) {
	var items []packItem
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		name := filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		it := packItem{name: name, mode: info.Mode(), path: p}
		switch {
		case info.Mode().IsDir(), info.Mode().IsRegular():
		case info.Mode()&fs.ModeSymlink != 0:
			if it.target, err = os.Readlink(p); err != nil {
				return err
			}
			if msg := checkLinkTarget(name, it.target); msg != "" {
				return invalid(name, "", "%s", msg)
			}
		default:
			return invalid(name, "", "unsupported file type %s", info.Mode().Type())
		}
		if len(items) >= DefaultMaxFiles {
			return invalid(archiveFile, "", "more than %d files", DefaultMaxFiles)
		}
		items = append(items, it)
		return nil
	})
	return items, err
}

func writeItem(zw *zip.Writer, it packItem, total *int64) error {
	// A fixed timestamp: archives of the same tree must be byte-identical
	// so their SHA256 is a stable content address.
	hdr := &zip.FileHeader{Name: it.name, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)}
	switch {
	case it.mode.IsDir():
		hdr.Name += "/"
		hdr.SetMode(fs.ModeDir | it.mode.Perm())
		_, err := zw.CreateHeader(hdr)
		return err
	case it.mode&fs.ModeSymlink != 0:
		// Symlinks are stored uncompressed with the target as content,
		// the convention Info-ZIP and charmcraft use.
		hdr.SetMode(fs.ModeSymlink | 0o777)
		hdr.Method = zip.Store
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		_, err = io.WriteString(fw, it.target)
		return err
	}
	hdr.SetMode(it.mode.Perm())
	hdr.Method = zip.Deflate
	fw, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	if it.data != nil {
		_, err = fw.Write(it.data)
		return err
	}
	f, err := os.Open(it.path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(fw, io.LimitReader(f, DefaultMaxSize-*total+1))
	if err != nil {
		return err
	}
	if *total += n; *total > DefaultMaxSize {
		return invalid(archiveFile, "", "charm larger than %d bytes", DefaultMaxSize)
	}
	return nil
}
