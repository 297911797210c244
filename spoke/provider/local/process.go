package local

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Restart backoff of crashed agents.
const (
	minBackoff  = 500 * time.Millisecond
	maxBackoff  = 30 * time.Second
	healthyTime = time.Minute
)

// start launches the machine's agent in its own process group (so it
// outlives the spoke) with output appended to agent.log, and records its
// PID. Nothing waits on it: alive reaps it.
func (p *Provisioner) start(model, id string) error {
	dir := p.machineDir(model, id)
	conf := filepath.Join(dir, "agent.conf")
	if err := ensureBoot(dir); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(p.cfg.AgentBinary, "machine", "--config", conf)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	// The provisioner tracks the agent by PID (it may be re-adopted by a
	// later process), so the handle is released.
	if err := cmd.Process.Release(); err != nil {
		return err
	}
	key := model + "/" + id
	pr := p.procs[key]
	if pr == nil {
		pr = &proc{}
		p.procs[key] = pr
	}
	pr.pid, pr.started = pid, p.cfg.Now()
	return os.WriteFile(filepath.Join(dir, "agent.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o600)
}

// ensureRunning re-adopts or restarts a provisioned machine's agent.
func (p *Provisioner) ensureRunning(mcModel string, mcID string) error {
	key := mcModel + "/" + mcID
	pr := p.procs[key]
	conf := filepath.Join(p.machineDir(mcModel, mcID), "agent.conf")
	if pr == nil {
		pr = &proc{pid: readPID(p.machineDir(mcModel, mcID)), started: p.cfg.Now()}
		p.procs[key] = pr
		if pr.pid > 0 && alive(pr.pid, conf) {
			p.cfg.Logger.Info("agent re-adopted", "model", mcModel, "machine", mcID, "pid", pr.pid)
			return nil
		}
		pr.pid = 0
	}
	if pr.pid > 0 && alive(pr.pid, conf) {
		if p.cfg.Now().Sub(pr.started) > healthyTime {
			pr.failures = 0
		}
		return nil
	}
	now := p.cfg.Now()
	if pr.pid > 0 { // it died since we last looked
		p.cfg.Logger.Warn("agent exited; restarting", "model", mcModel, "machine", mcID, "pid", pr.pid)
		if now.Sub(pr.started) < healthyTime {
			pr.failures++
		} else {
			pr.failures = 0
		}
		pr.pid = 0
		pr.next = now.Add(min(minBackoff<<min(pr.failures, 10), maxBackoff))
	}
	if now.Before(pr.next) {
		return nil
	}
	if _, err := os.Stat(conf); err != nil {
		return err
	}
	return p.start(mcModel, mcID)
}

// stop ends a machine's agent: SIGTERM to its process group, SIGKILL
// after StopGrace. Only a PID whose command line names this machine's
// agent.conf is signalled.
func (p *Provisioner) stop(model, id string) {
	key := model + "/" + id
	dir := p.machineDir(model, id)
	conf := filepath.Join(dir, "agent.conf")
	pid := readPID(dir)
	if pr := p.procs[key]; pr != nil && pr.pid > 0 {
		pid = pr.pid
	}
	delete(p.procs, key)
	if pid <= 0 || !alive(pid, conf) {
		return
	}
	syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(p.cfg.StopGrace)
	for alive(pid, conf) {
		if time.Now().After(deadline) {
			syscall.Kill(-pid, syscall.SIGKILL)
			deadline = time.Now().Add(p.cfg.StopGrace)
		}
		time.Sleep(20 * time.Millisecond) // polling an unrelated process: nothing to wait on
	}
	p.cfg.Logger.Info("agent stopped", "model", model, "machine", id, "pid", pid)
}

// alive reports whether pid is a running agent for conf, reaping it if it
// is an exited child of this process.
func alive(pid int, conf string) bool {
	var ws syscall.WaitStatus
	wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	if err == nil && wpid == pid {
		return false // our child, now reaped
	}
	if err != nil && !errors.Is(err, syscall.ECHILD) {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
	for i, a := range args {
		if a == "--config" && i+1 < len(args) && args[i+1] == conf {
			return true
		}
	}
	return false
}

func readPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "agent.pid"))
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return n
}
