package uniter

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/agent/internal/hooktools"
)

// TestMain makes the test binary double as the hook tools: hooks run it
// through the symlinks in the tools directory.
func TestMain(m *testing.M) {
	if hooktools.IsTool(filepath.Base(os.Args[0])) {
		os.Exit(hooktools.Main(os.Args[0], os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
