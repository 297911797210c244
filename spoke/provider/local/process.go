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
// outlives the spoke), as the machine's user when root, with output
// appended to agent.log, and records its PID. Nothing waits on it: alive
// reaps it.
func (p *Provisioner) start(pl place) error {
	dir, conf := pl.dir, pl.conf()
	u, err := p.ensureArea(pl)
	if err != nil {
		return err
	}
	if err := ensureBoot(dir, u); err != nil {
		return err
	}
	bin, err := p.agentBinary()
	if err != nil {
		return err
	}
	logf, err := openLog(filepath.Join(dir, "agent.log"), u)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "machine", "--config", conf)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if u != nil {
		cmd.Env = agentEnv(u, dir)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	// The provisioner tracks the agent by PID (it may be re-adopted by a
	// later process), so the handle is released.
	if err := cmd.Process.Release(); err != nil {
		return err
	}
	pr := p.procs[pl.key()]
	if pr == nil {
		pr = &proc{}
		p.procs[pl.key()] = pr
	}
	pr.pid, pr.started = pid, p.cfg.Now()
	return writeOwned(filepath.Join(dir, "agent.pid"), []byte(strconv.Itoa(pid)+"\n"), nil)
}

// ensureRunning re-adopts or restarts a provisioned machine's agent, in
// its place (a machine that migrated here from another controller of this
// host runs in that controller's Dir).
func (p *Provisioner) ensureRunning(pl place) error {
	mcModel, mcID := pl.model, pl.id
	pr := p.procs[pl.key()]
	conf := pl.conf()
	uid := p.agentUID(pl)
	if pr == nil {
		pr = &proc{pid: readPID(pl.dir), started: p.cfg.Now()}
		p.procs[pl.key()] = pr
		if pr.pid > 0 && alive(pr.pid, conf, uid) {
			p.cfg.Logger.Info("agent re-adopted", "model", mcModel, "machine", mcID, "pid", pr.pid, "dir", pl.dir)
			return nil
		}
		pr.pid = 0
	}
	if pr.pid > 0 && alive(pr.pid, conf, uid) {
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
	// An agent of this agent.conf that agent.pid does not name (another
	// controller of this host restarted it, around a migration's handover)
	// is adopted, not doubled.
	if pid := findAgent(conf, uid); pid > 0 {
		pr.pid, pr.started = pid, now
		p.cfg.Logger.Info("agent adopted", "model", mcModel, "machine", mcID, "pid", pid, "dir", pl.dir)
		return writeOwned(filepath.Join(pl.dir, "agent.pid"), []byte(strconv.Itoa(pid)+"\n"), nil)
	}
	return p.start(pl)
}

// findAgent is a live agent for conf whose user is uid (alive), 0 if none.
func findAgent(conf string, uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid > 1 && alive(pid, conf, uid) {
			return pid
		}
	}
	return 0
}

// agentUID is the user the machine's agent runs as: its own user's as
// root (-1 if it has none: no agent of it can run), or any in shared mode.
func (p *Provisioner) agentUID(pl place) int {
	if !p.isolated {
		return anyUID
	}
	if u := p.knownUser(pl); u != nil {
		return u.uid
	}
	return -1
}

// anyUID: alive checks no user (shared mode).
const anyUID = -2

// stop ends a machine's agent: SIGTERM to its process group, SIGKILL
// after StopGrace. Only a PID whose command line names this machine's
// agent.conf (and that runs as the machine's user, as root) is signalled.
func (p *Provisioner) stop(pl place) {
	model, id := pl.model, pl.id
	conf := pl.conf()
	uid := p.agentUID(pl)
	pid := readPID(pl.dir)
	if pr := p.procs[pl.key()]; pr != nil && pr.pid > 0 {
		pid = pr.pid
	}
	delete(p.procs, pl.key())
	if pid <= 0 || !alive(pid, conf, uid) {
		return
	}
	syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(p.cfg.StopGrace)
	for alive(pid, conf, uid) {
		if time.Now().After(deadline) {
			syscall.Kill(-pid, syscall.SIGKILL)
			deadline = time.Now().Add(p.cfg.StopGrace)
		}
		time.Sleep(20 * time.Millisecond) // polling an unrelated process: nothing to wait on
	}
	p.cfg.Logger.Info("agent stopped", "model", model, "machine", id, "pid", pid)
}

// alive reports whether pid is a running agent for conf whose user is uid
// (any for anyUID), reaping it if it is an exited child of this process.
// The PID comes from agent.pid, which a machine's user can rewrite: the
// command line and the user make sure it names that machine's agent.
func alive(pid int, conf string, uid int) bool {
	var ws syscall.WaitStatus
	wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	if err == nil && wpid == pid {
		return false // our child, now reaped
	}
	if err != nil && !errors.Is(err, syscall.ECHILD) {
		return false
	}
	if uid != anyUID {
		if real, _, ok := procUIDs(pid); !ok || real != uid {
			return false
		}
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
	b, err := readSmall(filepath.Join(dir, "agent.pid"))
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return n
}
