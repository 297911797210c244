// Package proctree finds and ends the processes that belong to a directory
// tree: how a local machine (a machine agent and the workloads its charms
// started, all working in or naming paths under the machine's directory)
// is powered off, by the controller (spoke/provider/local) or by the
// machine agent itself (juju-reboot).
package proctree

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KillUnder ends every process (but this one) that belongs to a directory
// tree: a process whose working directory is under dir, or whose
// command line names a path under dir (machine agents name their
// agent.conf, charm workloads usually their charm directory). This is how a
// local "machine" is powered off when there is no time for hooks
// (kill-controller, forced removal, droverd dev's Ctrl-C, juju-reboot):
// SIGTERM first, SIGKILL after grace. It returns how many processes are
// left.
func KillUnder(dir string, grace time.Duration) int {
	return KillUnderExcept(dir, nil, grace)
}

// KillUnderExcept is KillUnder, sparing every process that belongs to one
// of the directories except (inside dir) as well: a process whose working
// directory is there, or whose command line names a path there, whatever
// else it names under dir.
func KillUnderExcept(dir string, except []string, grace time.Duration) int {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return 0
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var spared []string
	for _, e := range except {
		if abs, err := filepath.Abs(e); err == nil {
			spared = append(spared, strings.TrimSuffix(abs, "/")+"/")
		}
	}
	belongs := func(pid int, prefix string) bool {
		if !belongsTo(pid, prefix) {
			return false
		}
		for _, s := range spared {
			if belongsTo(pid, s) {
				return false
			}
		}
		return true
	}
	victims := processesUnder(prefix, belongs)
	for _, pid := range victims {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(victims) > 0 {
		var still []int
		for _, pid := range victims {
			if belongs(pid, prefix) {
				still = append(still, pid)
			}
		}
		victims = still
		if len(victims) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, pid := range victims {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			deadline = time.Now().Add(grace)
		}
		time.Sleep(20 * time.Millisecond) // other processes' exits: nothing to wait on
	}
	return len(processesUnder(prefix, belongs))
}

func processesUnder(prefix string, belongs func(int, string) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		if belongs(pid, prefix) {
			out = append(out, pid)
		}
	}
	return out
}

// belongsTo reports whether a live (not zombie) process works in or names
// a path under prefix.
func belongsTo(pid int, prefix string) bool {
	base := "/proc/" + strconv.Itoa(pid)
	if st, err := os.ReadFile(base + "/stat"); err != nil || zombie(st) {
		return false
	}
	if cwd, err := os.Readlink(base + "/cwd"); err == nil && strings.HasPrefix(cwd+"/", prefix) {
		return true
	}
	cmdline, err := os.ReadFile(base + "/cmdline")
	if err != nil {
		return false
	}
	for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
		if bytes.HasPrefix(a, []byte(prefix)) {
			return true
		}
	}
	return false
}

func zombie(stat []byte) bool {
	// The state follows the command name in parentheses: "pid (comm) S ...".
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
