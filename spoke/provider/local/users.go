package local

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Machine users. A controller running as root runs each local machine's
// agent, and so its hooks, actions, exec commands and the workloads its
// charms start, as a system user of its own (docs/decisions/0016):
//
//   - the user is made with useradd when the machine is provisioned and
//     deleted with userdel when it is torn down; its home is the machine's
//     directory, its shell nologin, its only group its own;
//   - the machine's directory is owned by it with mode 0700, and its
//     parents (Dir and Dir/<model>) are root-owned 0755 and hold nothing
//     but machine directories; the controller's data directory is not
//     among them (DefaultDir);
//   - the user's name is derived from the controller, the model and the
//     machine, so machines of two controllers on one host never share one;
//     a user of that name whose home is elsewhere is never taken over.
//
// A controller that does not run as root cannot make users: its machines
// run as its own user, and it says so loudly (shared mode).

// machineRoot is where a root controller's machine directories live by
// default: outside its data directory, which is private (0700) to root.
const machineRoot = "/var/lib/drover-machines"

// DefaultDir is the default directory of a controller node's local
// machines. As root it is a directory of its own under
// /var/lib/drover-machines (named after the data directory), since the
// machines' users must reach their directories and must not reach the
// data directory; otherwise it is DATA_DIR/machines.
func DefaultDir(dataDir string) string {
	if os.Geteuid() != 0 {
		return filepath.Join(dataDir, "machines")
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(machineRoot, filepath.Base(abs)+"-"+hex.EncodeToString(sum[:4]))
}

// maxUserName is the longest user name made: useradd accepts 32
// characters; one is kept spare for tools that count a terminator.
const maxUserName = 31

var numericID = regexp.MustCompile(`^[0-9]{1,10}$`)

// UserName is the system user of a controller's model's machine:
// "drover-<id>-<hash of controller and model>" for a numeric machine ID
// (at least 56 bits of hash), "drover-x<hash of all three>" otherwise.
func UserName(controller, model, id string) string {
	if numericID.MatchString(id) {
		sum := sha256.Sum256([]byte(controller + "\x00" + model))
		prefix := "drover-" + id + "-"
		return prefix + hex.EncodeToString(sum[:])[:maxUserName-len(prefix)]
	}
	sum := sha256.Sum256([]byte(controller + "\x00" + model + "\x00" + id))
	return "drover-x" + hex.EncodeToString(sum[:])[:maxUserName-len("drover-x")]
}

// machineUser is a machine's system user.
type machineUser struct {
	name     string
	uid, gid int
}

// errForeignUser: a user of a machine user's name exists but is not that
// machine's (its home is elsewhere); it is neither used nor deleted.
var errForeignUser = errors.New("user exists and is not this machine's")

// lookupUser finds name's user; a nil user and no error if there is none.
// A user whose home is not home is refused with errForeignUser.
func lookupUser(name, home string) (*machineUser, error) {
	u, err := user.Lookup(name)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if filepath.Clean(u.HomeDir) != filepath.Clean(home) {
		return nil, fmt.Errorf("%s (home %s): %w", name, u.HomeDir, errForeignUser)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, err
	}
	if uid == 0 || gid == 0 {
		return nil, fmt.Errorf("%s has uid %d gid %d: %w", name, uid, gid, errForeignUser)
	}
	return &machineUser{name: name, uid: uid, gid: gid}, nil
}

// ensureUser returns the machine user name with home dir, creating it
// (a system user with a group of its own, no login shell, and no home
// made for it: the provisioner makes the machine's directory) if needed.
func ensureUser(name, home, comment string) (*machineUser, error) {
	if u, err := lookupUser(name, home); u != nil || err != nil {
		return u, err
	}
	out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
		"--home-dir", home, "--shell", nologinShell(), "--comment", comment, name).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("useradd %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	u, err := lookupUser(name, home)
	if err == nil && u == nil {
		err = fmt.Errorf("useradd %s: the user is not found after it was made", name)
	}
	return u, err
}

func nologinShell() string {
	for _, sh := range []string{"/usr/sbin/nologin", "/sbin/nologin"} {
		if _, err := os.Stat(sh); err == nil {
			return sh
		}
	}
	return "/bin/false"
}

// removeUser ends every process of the machine user name (home dir) and
// deletes the user and its group. A user that does not exist is done; a
// foreign one is left alone.
func removeUser(name, home string, grace time.Duration) error {
	u, err := lookupUser(name, home)
	if err != nil || u == nil {
		if errors.Is(err, errForeignUser) {
			return nil
		}
		return err
	}
	if left := killUser(u.uid, grace); left > 0 {
		return fmt.Errorf("userdel %s: %d of its processes could not be stopped", name, left)
	}
	if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
		return fmt.Errorf("userdel %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// killUser ends every process whose real or effective user is uid: SIGTERM,
// then SIGKILL after grace. It returns how many are left.
func killUser(uid int, grace time.Duration) int {
	victims := processesOf(uid)
	for _, pid := range victims {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for tries := 0; len(victims) > 0 && tries < 1000; tries++ {
		if time.Now().After(deadline) {
			for _, pid := range victims {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond) // other processes' exits: nothing to wait on
		victims = processesOf(uid)
	}
	return len(victims)
}

// processesOf lists the live (not zombie) processes whose real or effective
// user is uid.
func processesOf(uid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 {
			continue
		}
		if r, eff, ok := procUIDs(pid); ok && (r == uid || eff == uid) {
			out = append(out, pid)
		}
	}
	return out
}

// procUIDs reads a live process's real and effective user from
// /proc/<pid>/status; ok is false for a zombie or a process gone.
func procUIDs(pid int) (real, effective int, ok bool) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	real, effective = -1, -1
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "State:" && f[1] == "Z":
			return 0, 0, false
		case len(f) > 2 && f[0] == "Uid:":
			real, _ = strconv.Atoi(f[1])
			effective, _ = strconv.Atoi(f[2])
		}
	}
	return real, effective, real >= 0
}

// checkReachable reports why a machine user could not reach dir, or a
// root-owned parent could be replaced by someone else: every directory
// from / to dir must be owned by root, searchable by others, and not
// writable by group or others unless sticky (as /tmp).
func checkReachable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		mode := fi.Mode()
		switch {
		case st.Uid != 0:
			return fmt.Errorf("%s is owned by uid %d, not root", p, st.Uid)
		case mode.Perm()&0o001 == 0:
			return fmt.Errorf("%s (mode %04o) is not searchable by machine users", p, mode.Perm())
		case mode.Perm()&0o022 != 0 && (mode&os.ModeSticky == 0 || p == real):
			// A sticky parent (/tmp) is fine: no one else may rename or
			// remove the root-owned directory in it.
			return fmt.Errorf("%s (mode %04o) is writable by others", p, mode.Perm())
		}
		if p == "/" {
			return nil
		}
	}
}
