package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// adminCredential is the file `droverd spoke --bootstrap` writes to
// DATA_DIR/controller.json. It is re-declared here (not imported) because
// the client links no server code.
type adminCredential struct {
	ControllerName string   `json:"controller-name"`
	ControllerUUID string   `json:"controller-uuid"`
	APIAddresses   []string `json:"api-addresses"`
	CACert         string   `json:"ca-cert"`
	User           string   `json:"user"`
	Password       string   `json:"password"`
}

const (
	credentialFile = "controller.json"
	pidFile        = "droverd.pid"
	logFileName    = "droverd.log"
)

func readAdminCredential(dataDir string) (*adminCredential, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, credentialFile))
	if err != nil {
		return nil, err
	}
	var c adminCredential
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dataDir, credentialFile), err)
	}
	return &c, nil
}

// findDroverd looks for droverd next to the drover binary, then on PATH.
func (a *Commands) findDroverd() (string, error) {
	if p := a.Getenv("DROVER_DROVERD"); p != "" {
		return p, nil
	}
	if a.Executable != "" {
		p := filepath.Join(filepath.Dir(a.Executable), "droverd")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("droverd")
	if err != nil {
		return "", errors.New("cannot find the droverd binary next to drover or on PATH; install it (make build) or set DROVER_DROVERD")
	}
	return p, nil
}

// startDroverd starts a controller node in its own session so it outlives
// drover, with its output in DATA_DIR/droverd.log, and records its PID.
// The returned channel is closed if the process exits.
func startDroverd(exe, dataDir string, args []string) (int, <-chan struct{}, error) {
	logf, err := os.OpenFile(filepath.Join(dataDir, logFileName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, nil, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("cannot start %s: %w", exe, err)
	}
	exited := make(chan struct{})
	go func() { // reaps the child if it dies while drover still runs
		_ = cmd.Wait() // its log says why
		close(exited)
	}()
	pid := cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(dataDir, pidFile), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		_ = cmd.Process.Kill()
		return 0, nil, err
	}
	return pid, exited, nil
}

// logTail returns the last lines of a node's log, to explain a failure.
func logTail(dataDir string, n int) string {
	data, err := os.ReadFile(filepath.Join(dataDir, logFileName))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// localNode is one controller process started from this machine.
type localNode struct {
	dataDir string
	pid     int
}

// localNodes finds the processes of a locally bootstrapped controller: the
// bootstrap node (the PID in the store, or its droverd.pid) and every HA
// node enable-ha started in a sibling "<data-dir>-ha-*" directory.
func localNodes(d *clientstore.ControllerDetails) []localNode {
	var out []localNode
	if d.DataDir == "" {
		return nil
	}
	pid := d.PID
	if p, err := readPID(d.DataDir); err == nil {
		pid = p
	}
	out = append(out, localNode{dataDir: d.DataDir, pid: pid})
	ha, _ := filepath.Glob(d.DataDir + "-ha-*") // a bad pattern is impossible here
	for _, dir := range ha {
		if p, err := readPID(dir); err == nil {
			out = append(out, localNode{dataDir: dir, pid: p})
		}
	}
	return out
}

func readPID(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// isDroverd reports whether pid is alive and is droverd running on
// dataDir, so that a recycled PID is never signalled.
func isDroverd(pid int, dataDir string) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name; a zombie is gone.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(cmdline), "\x00")
	if len(args) == 0 || !strings.HasSuffix(args[0], "droverd") {
		return false
	}
	abs, _ := filepath.Abs(dataDir)
	for _, a := range args {
		if a == dataDir || a == abs {
			return true
		}
	}
	return false
}

// stopNodes signals every node (SIGTERM, or SIGKILL when kill) and waits
// until each is gone; SIGTERM escalates to SIGKILL after grace.
func stopNodes(ctx context.Context, nodes []localNode, kill bool, grace time.Duration, p *modelcmd.Progress) error {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	var alive []localNode
	for _, n := range nodes {
		if isDroverd(n.pid, n.dataDir) {
			if err := syscall.Kill(n.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("cannot stop controller process %d: %w", n.pid, err)
			}
			alive = append(alive, n)
		}
	}
	deadline := time.Now().Add(grace)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	escalated := kill
	for {
		var still []localNode
		for _, n := range alive {
			if isDroverd(n.pid, n.dataDir) {
				still = append(still, n)
			}
		}
		if len(still) == 0 {
			return nil
		}
		p.Update("waiting for %d controller process(es) to stop", len(still))
		if !escalated && time.Now().After(deadline) {
			for _, n := range still {
				_ = syscall.Kill(n.pid, syscall.SIGKILL) // it may have exited meanwhile
			}
			escalated = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// teardownMachines stops the local machines (agents and the workloads their
// charms started) of a stopped controller, through `droverd teardown`: the
// CLI knows no server internals. With remove, their directories and users
// (a root controller's machines live outside its data directory) go too.
func (a *Commands) teardownMachines(ctx context.Context, nodes []localNode, remove bool) error {
	exe, err := a.findDroverd()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		args := []string{"teardown", "--data-dir", n.dataDir}
		if remove {
			args = append(args, "--remove")
		}
		out, err := exec.CommandContext(ctx, exe, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("controller stopped, but its machines could not all be stopped: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
