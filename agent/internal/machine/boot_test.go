package machine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBootID: the provider's boot marker in the data directory names the
// boot (its first field); without one, the kernel's boot id does.
func TestBootID(t *testing.T) {
	dir := t.TempDir()
	kernel, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skip("no kernel boot id here:", err)
	}
	if got := bootID(dir); got != strings.TrimSpace(string(kernel)) {
		t.Errorf("without a marker: %q, want the kernel's %q", got, strings.TrimSpace(string(kernel)))
	}
	if err := os.WriteFile(filepath.Join(dir, "boot-id"), []byte("machine-boot host-boot\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := bootID(dir); got != "machine-boot" {
		t.Errorf("with the provider's marker: %q, want machine-boot", got)
	}
}
