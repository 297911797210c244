package blobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestPutOpenVerify(t *testing.T) {
	s, err := New(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("charm archive bytes")
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	sha, n, err := s.Put(bytes.NewReader(data), "")
	if err != nil || sha != want || n != int64(len(data)) {
		t.Fatalf("Put = %q, %d, %v", sha, n, err)
	}
	if !s.Has(sha) {
		t.Fatal("Has = false after Put")
	}
	got, err := s.ReadAll(sha)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	if _, _, err := s.Put(strings.NewReader("other"), want); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("mismatch: %v", err)
	}
	if _, err := s.Open(strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := s.Open("../../etc/passwd"); !errors.Is(err, ErrBadHash) {
		t.Fatalf("bad hash: %v", err)
	}
	small, _ := New(t.TempDir(), 4)
	if _, _, err := small.Put(strings.NewReader("12345"), ""); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
}
