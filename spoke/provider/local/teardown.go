package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/droverhq/drover/internal/proctree"
)

// KillProcessesUnder powers off the local machines under dir (one machine
// directory, or a directory of models' machine directories): it ends every
// process that works in or names a path under it (internal/proctree) and,
// once none is left, removes the machines' boot markers, so their next
// start is a new boot (boot.go). This is how a local machine is powered off
// when there is no time for hooks (kill-controller, forced removal, droverd
// dev's Ctrl-C). It returns how many processes are left.
//
// The machines of a model handed over to another controller of this host
// (a model directory in dir that carries HandoverMarker) are that
// controller's: their processes and boot markers are left alone. The
// machines this controller adopted from another (links under dir to their
// areas, adopted.go) are its own: they are powered off too.
func KillProcessesUnder(dir string, grace time.Duration) int {
	spared := handedOverUnder(dir)
	left := proctree.KillUnderExcept(dir, spared, grace)
	if left == 0 {
		forgetBoots(dir, spared)
	}
	return left + killAdopted(adoptedUnder(dir, spared), grace)
}

// handedOverUnder lists dir, or the models' directories in it, that carry
// HandoverMarker.
func handedOverUnder(dir string) []string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	if hasHandoverMarker(abs) {
		return []string{abs}
	}
	entries, _ := os.ReadDir(abs) // a missing directory holds none
	var out []string
	for _, e := range entries {
		if e.IsDir() && hasHandoverMarker(filepath.Join(abs, e.Name())) {
			out = append(out, filepath.Join(abs, e.Name()))
		}
	}
	return out
}

// within reports whether path is one of dirs or inside one.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// DestroyMachines removes the local machines under dir whatever the store
// says, for a controller that is gone (kill-controller) or a test: it
// powers them off (KillProcessesUnder), ends the processes of every user
// whose home is under dir (the machines' users, as root) and deletes those
// users, then removes dir. The machines of a model handed over to another
// controller of this host are that controller's, and stay, with their
// users and the directories that hold them; a handed-over model's
// directory that holds nothing but its marker goes. The machines this
// controller adopted from another go with their areas (destroyAdopted).
func DestroyMachines(dir string, grace time.Duration) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	spared := handedOverUnder(abs)
	var errs []error
	if left := KillProcessesUnder(abs, grace); left > 0 {
		errs = append(errs, fmt.Errorf("%d processes under %s could not be stopped", left, abs))
	}
	if err := destroyAdopted(adoptedUnder(abs, spared), grace); err != nil {
		errs = append(errs, err)
	}
	for _, u := range usersUnder(abs) {
		if within(u.home, spared) {
			continue
		}
		if err := removeUser(u.name, u.home, grace); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeAllBut(abs, spared); err != nil {
		errs = append(errs, err)
	}
	for _, d := range spared {
		if _, err := removeBareHandover(d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(spared) > 0 {
		removeEmptyControllerDir(abs)
	}
	if filepath.Dir(abs) == machineRoot {
		// The shared default root goes with its last controller; another
		// controller's directory in it makes this fail, harmlessly.
		_ = os.Remove(machineRoot)
	}
	return errors.Join(errs...)
}

// removeAllBut removes dir but the directories spared (dir itself, or
// directories in it).
func removeAllBut(dir string, spared []string) error {
	if len(spared) == 0 {
		return os.RemoveAll(dir)
	}
	if within(dir, spared) {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); !within(p, spared) {
			errs = append(errs, os.RemoveAll(p))
		}
	}
	return errors.Join(errs...)
}

// usersUnder lists the users in /etc/passwd whose home is under dir.
func usersUnder(dir string) []struct{ name, home string } {
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return nil
	}
	var out []struct{ name, home string }
	for _, line := range strings.Split(string(passwd), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 7 && strings.HasPrefix(f[5], dir+"/") {
			out = append(out, struct{ name, home string }{f[0], f[5]})
		}
	}
	return out
}
