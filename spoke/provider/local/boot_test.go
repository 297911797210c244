package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func bootOf(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, BootFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestMachineBoots: a machine's boot marker is made at its first start,
// kept across agent restarts, and replaced after a power-off or a reboot
// of the host.
func TestMachineBoots(t *testing.T) {
	machines := t.TempDir()
	dir := filepath.Join(machines, "model-uuid", "0")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := ensureBoot(dir, nil); err != nil {
		t.Fatal(err)
	}
	first := bootOf(t, dir)
	if f := strings.Fields(first); len(f) != 2 || f[1] != firstField(hostBootFile) {
		t.Fatalf("marker %q: want a machine boot id and the host's boot id", first)
	}
	if err := ensureBoot(dir, nil); err != nil { // the agent restarted: same boot
		t.Fatal(err)
	}
	if got := bootOf(t, dir); got != first {
		t.Fatalf("an agent restart changed the boot: %q -> %q", first, got)
	}

	// Powered off (nothing runs under the machines' directory): the marker
	// goes, and the next start is a new boot.
	if left := KillProcessesUnder(machines, time.Second); left != 0 {
		t.Fatalf("%d processes left under an empty machine directory", left)
	}
	if _, err := os.Stat(filepath.Join(dir, BootFile)); !os.IsNotExist(err) {
		t.Fatalf("the boot marker outlived the power-off: %v", err)
	}
	if err := ensureBoot(dir, nil); err != nil {
		t.Fatal(err)
	}
	second := bootOf(t, dir)
	if strings.Fields(second)[0] == strings.Fields(first)[0] {
		t.Fatal("power-on after a power-off kept the old boot id")
	}

	// A marker from another host boot (the host rebooted): a new boot.
	old := "00000000-0000-0000-0000-000000000000 another-host-boot\n"
	if err := os.WriteFile(filepath.Join(dir, BootFile), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ensureBoot(dir, nil); err != nil {
		t.Fatal(err)
	}
	if got := bootOf(t, dir); got == strings.TrimSpace(old) || strings.Fields(got)[0] == strings.Fields(second)[0] {
		t.Fatalf("after a host reboot the marker is %q", got)
	}
}
