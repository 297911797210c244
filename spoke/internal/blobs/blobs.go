// Package blobs stores charm archives and resource content,
// content-addressed by sha256, on a controller node's disk. A blob is written to a temporary file, hashed while
// written, and renamed into place only if its hash matches, so a stored blob
// is always whole and always what its name says.
package blobs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
)

// Errors callers test with errors.Is.
var (
	ErrNotFound     = errors.New("blob not found")
	ErrHashMismatch = errors.New("blob content does not match its sha256")
	ErrBadHash      = errors.New("not a sha256 hex digest")
	ErrTooLarge     = errors.New("blob too large")
)

var hexRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidHash reports whether s is a lowercase hex sha256 digest.
func ValidHash(s string) bool { return hexRe.MatchString(s) }

// Store is a directory of blobs.
type Store struct {
	dir      string
	maxBytes int64
}

// New opens (creating) a blob store in dir; blobs over maxBytes are refused.
func New(dir string, maxBytes int64) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, err
	}
	return &Store{dir: dir, maxBytes: maxBytes}, nil
}

func (s *Store) path(sha string) string { return filepath.Join(s.dir, sha[:2], sha) }

// Has reports whether the blob is stored.
func (s *Store) Has(sha string) bool {
	if !ValidHash(sha) {
		return false
	}
	_, err := os.Stat(s.path(sha))
	return err == nil
}

// Put stores r's content. If want is not empty the content must hash to it.
// It returns the sha256 and size. Storing an existing blob is a no-op.
func (s *Store) Put(r io.Reader, want string) (string, int64, error) {
	if want != "" && !ValidHash(want) {
		return "", 0, ErrBadHash
	}
	st, err := s.Stage(r)
	if err != nil {
		return "", 0, err
	}
	defer st.Discard()
	if want != "" && st.SHA256 != want {
		return "", 0, fmt.Errorf("%w: got %s, want %s", ErrHashMismatch, st.SHA256, want)
	}
	if err := st.Commit(); err != nil {
		return "", 0, err
	}
	return st.SHA256, st.Size, nil
}

// Staged is content written to a temporary file of the store and hashed
// while written, not yet stored: the caller reads it back (ReadAt), then
// commits or discards it. Its bytes are on disk, never in memory.
type Staged struct {
	SHA256 string
	Size   int64
	store  *Store
	f      *os.File
	done   bool
}

// Stage writes r's content to a temporary file, hashing it; content over
// the store's maxBytes is refused with ErrTooLarge as soon as it is read.
func (s *Store) Stage(r io.Reader) (*Staged, error) {
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "blob-*")
	if err != nil {
		return nil, err
	}
	st := &Staged{store: s, f: tmp}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, s.maxBytes+1))
	if err == nil && n > s.maxBytes {
		err = fmt.Errorf("%w: over %d bytes", ErrTooLarge, s.maxBytes)
	}
	if err != nil {
		st.Discard()
		return nil, fmt.Errorf("write blob: %w", err)
	}
	st.SHA256, st.Size = hex.EncodeToString(h.Sum(nil)), n
	return st, nil
}

// ReadAt reads the staged content.
func (st *Staged) ReadAt(p []byte, off int64) (int, error) { return st.f.ReadAt(p, off) }

// Commit stores the staged content under its hash, durably. Storing an
// existing blob is a no-op.
func (st *Staged) Commit() error {
	if err := st.f.Sync(); err != nil {
		return err
	}
	if err := st.f.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(st.store.path(st.SHA256)), 0o700); err != nil {
		return err
	}
	if err := os.Rename(st.f.Name(), st.store.path(st.SHA256)); err != nil {
		return err
	}
	st.done = true
	return nil
}

// Discard drops content not committed; after Commit it does nothing.
func (st *Staged) Discard() {
	if !st.done {
		st.f.Close()
		os.Remove(st.f.Name())
	}
}

// Open returns the blob's content.
func (s *Store) Open(sha string) (*os.File, error) {
	if !ValidHash(sha) {
		return nil, ErrBadHash
	}
	f, err := os.Open(s.path(sha))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, sha)
	}
	return f, err
}

// ReadAll returns the blob's bytes.
func (s *Store) ReadAll(sha string) ([]byte, error) {
	f, err := s.Open(sha)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
