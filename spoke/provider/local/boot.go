package local

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// A local machine's boots. A real machine's agent tells a reboot by the
// kernel's boot id; a local machine is a process tree on this host, which
// is powered off (KillProcessesUnder) and on (start) without the host
// rebooting. The provider keeps the machine's boot in BootFile in its
// directory, as a tmpfs marker survives a process restart but not a
// reboot:
//
//   - power-on after a power-off (no marker) or after the host itself
//     rebooted (the marker names another host boot) starts a new boot;
//   - an agent restarted after a crash, its workloads still running, stays
//     in the same boot.
//
// The machine agent reads the first field (agent/internal/machine), and a
// started unit runs its start hook again on a new boot, as Juju's do after
// a reboot (CHARM-CONTRACT §2.2, reboot detection).

// BootFile is the name of the boot marker in a machine's directory: the
// machine's boot id, then the host's.
const BootFile = "boot-id"

// hostBootFile is the kernel's boot id.
const hostBootFile = "/proc/sys/kernel/random/boot_id"

// ensureBoot starts a new boot of the machine in dir unless its marker
// names a boot of this host's current one. The marker is the machine
// user's u (nil: the controller's), for its agent to read.
func ensureBoot(dir string, u *machineUser) error {
	host := firstField(hostBootFile)
	if f := strings.Fields(readString(filepath.Join(dir, BootFile))); len(f) == 2 && f[1] == host {
		return nil
	}
	return writeOwned(filepath.Join(dir, BootFile), []byte(uuid.NewString()+" "+host+"\n"), u)
}

// forgetBoots removes the boot markers of the machines under dir (a
// machine directory, or a directory of models' machine directories) but
// those in the directories spared: they were powered off, so their next
// start is a new boot. Links are not followed (the areas of adopted
// machines are another's directories: killAdopted).
func forgetBoots(dir string, spared []string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		if within(d, spared) {
			return
		}
		os.Remove(filepath.Join(d, BootFile)) // a link planted there goes, not its target
		if depth == 2 {
			return
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.IsDir() { // not a link to one
				walk(filepath.Join(d, e.Name()), depth+1)
			}
		}
	}
	if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
		walk(abs, 0)
	}
}

func firstField(path string) string {
	if f := strings.Fields(readString(path)); len(f) > 0 {
		return f[0]
	}
	return ""
}

func readString(path string) string {
	b, _ := readSmall(path)
	return string(b)
}
