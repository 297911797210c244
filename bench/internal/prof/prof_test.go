package prof

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStartCPUWritesAProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := StartCPU(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v (size %d)", path, err, fi.Size())
	}
	stop, err = StartCPU("")
	if err != nil || stop() != nil {
		t.Fatalf("no profile asked: %v", err)
	}
}
