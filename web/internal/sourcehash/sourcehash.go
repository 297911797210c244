// Package sourcehash names the dashboard's sources with one SHA-256: the
// files `npm run build` reads (the npm manifests, index.html, the Vite and
// TypeScript configuration, src/, public/ and the build's scripts/). The Makefile writes it next
// to the build (dist/source.sha256) and a test of package web compares, so
// a change to the sources without a rebuild of the committed dist fails.
package sourcehash

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
)

// topLevel are the patterns of the files at the app's root that feed the
// build; dirs are the directories whose every file does.
var (
	topLevel = []string{"package.json", "package-lock.json", "index.html", "vite.config.*", "tsconfig*.json"}
	dirs     = []string{"src", "public", "scripts"}
)

// Files lists the source files under root (the web/ directory), sorted,
// as slash-separated paths relative to it.
func Files(root fs.FS) ([]string, error) {
	var out []string
	for _, p := range topLevel {
		m, err := fs.Glob(root, p)
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	for _, d := range dirs {
		err := fs.WalkDir(root, d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.Type().IsRegular() {
				out = append(out, p)
			}
			return nil
		})
		if err != nil && !isNotExist(err, d) {
			return nil, err
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// isNotExist reports whether err says that the directory d is absent: an
// app without public/ is fine.
func isNotExist(err error, d string) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Path == d && errors.Is(pe.Err, fs.ErrNotExist)
}

// Hash returns the hex SHA-256 over the source files of root: for each,
// in order, its path, its length and its content, so that no two sets of
// files hash alike by moving bytes between names.
func Hash(root fs.FS) (string, error) {
	files, err := Files(root)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		b, err := fs.ReadFile(root, f)
		if err != nil {
			return "", fmt.Errorf("sourcehash: %w", err)
		}
		h.Write([]byte(path.Clean(f) + "\n" + strconv.Itoa(len(b)) + "\n"))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
