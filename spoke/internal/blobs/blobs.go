// Package blobs stores charm archives content-addressed by sha256 on a
// controller node's disk. A blob is written to a temporary file, hashed while
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
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "blob-*")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, s.maxBytes+1))
	if err != nil {
		return "", 0, fmt.Errorf("write blob: %w", err)
	}
	if n > s.maxBytes {
		return "", 0, fmt.Errorf("%w: over %d bytes", ErrTooLarge, s.maxBytes)
	}
	sha := hex.EncodeToString(h.Sum(nil))
	if want != "" && sha != want {
		return "", 0, fmt.Errorf("%w: got %s, want %s", ErrHashMismatch, sha, want)
	}
	if err := tmp.Sync(); err != nil {
		return "", 0, err
	}
	if err := tmp.Close(); err != nil {
		return "", 0, err
	}
	if err := os.MkdirAll(filepath.Dir(s.path(sha)), 0o700); err != nil {
		return "", 0, err
	}
	if err := os.Rename(tmp.Name(), s.path(sha)); err != nil {
		return "", 0, err
	}
	return sha, n, nil
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
