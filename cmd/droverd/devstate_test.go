package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDevStateLockAndReset: one droverd dev at a time on a state dir (a
// second is refused, saying why), and --reset empties the dir but for its
// lock.
func TestDevStateLockAndReset(t *testing.T) {
	dir := embeddedStateDir(t)
	for _, f := range []string{"addresses.json", "dev.json", "spoke-east/controller.json", "postgres/data/PG_VERSION"} {
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := openDevState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openDevState(dir); err == nil || !strings.Contains(err.Error(), "another droverd dev is running on "+dir) {
		t.Fatalf("a second droverd dev on %s: %v", dir, err)
	}
	unlock()
	unlock, err = openDevState(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := resetDevState(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{devLockFile}) {
		t.Errorf("after --reset the state dir holds %v, want only %s", left, devLockFile)
	}
}
