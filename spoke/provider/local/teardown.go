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
func KillProcessesUnder(dir string, grace time.Duration) int {
	left := proctree.KillUnder(dir, grace)
	if left == 0 {
		forgetBoots(dir)
	}
	return left
}

// DestroyMachines removes the local machines under dir whatever the store
// says, for a controller that is gone (kill-controller) or a test: it
// powers them off (KillProcessesUnder), ends the processes of every user
// whose home is under dir (the machines' users, as root) and deletes those
// users, then removes dir.
func DestroyMachines(dir string, grace time.Duration) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var errs []error
	if left := KillProcessesUnder(abs, grace); left > 0 {
		errs = append(errs, fmt.Errorf("%d processes under %s could not be stopped", left, abs))
	}
	for _, u := range usersUnder(abs) {
		if err := removeUser(u.name, u.home, grace); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(abs); err != nil {
		errs = append(errs, err)
	}
	if filepath.Dir(abs) == machineRoot {
		// The shared default root goes with its last controller; another
		// controller's directory in it makes this fail, harmlessly.
		_ = os.Remove(machineRoot)
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
