package uniter

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// JujuVersion is the version the agent advertises to charms; ops gates
// features on it (CHARM-CONTRACT §4.3).
const JujuVersion = "3.6.4"

// ErrCharmMissing means the charm directory has no metadata.yaml: no hook
// may run (CHARM-CONTRACT §1.6).
var ErrCharmMissing = errors.New("charm missing from disk")

// errKilled means the hook process was killed by a signal: it is queued
// again rather than failed (CHARM-CONTRACT §2.5).
var errKilled = errors.New("hook process killed")

// execution is one hook or action process.
type execution struct {
	charmDir string
	// dispatchPath is hooks/<name> or actions/<name>.
	dispatchPath string
	// script, when set, is run by bash instead of the charm's handler
	// (juju exec).
	script string
	env    []string
	// logLine receives each output line; stderr true for stderr.
	logLine func(stderr bool, line string)
	// capture keeps stdout and stderr (actions report them).
	capture bool
	// pgid is the running process group, 0 before the start and after the
	// end (kill).
	pgid atomic.Int64
}

// kill ends the running process group at once, if any: by the time it
// returns, no process of the hook (a hook tool waiting on the agent among
// them) runs another instruction.
func (e *execution) kill() {
	if p := e.pgid.Load(); p > 0 {
		_ = syscall.Kill(-int(p), syscall.SIGKILL)
	}
}

// result of an execution.
type result struct {
	missing bool // neither dispatch nor the hook/action file exists
	code    int
	stdout  string
	stderr  string
	handler string
}

// newContextID is <unit>-<hook>-<32 hex>, as Juju makes it.
func newContextID(unit, name string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return unit + "-" + name + "-" + hex.EncodeToString(b[:])
}

// handler finds what to run: dispatch if present (it must be
// executable), else the legacy hooks/<name> or actions/<name>.
func handler(charmDir, dispatchPath string) (string, error) {
	if _, err := os.Stat(filepath.Join(charmDir, "metadata.yaml")); err != nil {
		return "", ErrCharmMissing
	}
	for _, rel := range []string{"dispatch", dispatchPath} {
		p := filepath.Join(charmDir, rel)
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("%s is not executable", rel)
		}
		return p, nil
	}
	return "", nil
}

// run executes the handler with the charm directory as cwd. Cancelling ctx
// kills the process group (the hook is then re-queued).
func (e *execution) run(ctx context.Context) (result, error) {
	var cmd *exec.Cmd
	path := ""
	if e.script != "" {
		if _, err := os.Stat(filepath.Join(e.charmDir, "metadata.yaml")); err != nil {
			return result{}, ErrCharmMissing
		}
		cmd = exec.Command("/bin/bash", "-c", e.script)
	} else {
		var err error
		if path, err = handler(e.charmDir, e.dispatchPath); err != nil || path == "" {
			return result{missing: path == "" && err == nil}, err
		}
		cmd = exec.Command(path)
	}
	cmd.Dir, cmd.Env = e.charmDir, e.env
	// Its own process group, so the whole hook can be killed; and killed
	// with the agent, so a hook never outlives the agent that runs it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Daemons a hook starts may keep its output pipes open: stop waiting
	// for them shortly after the hook itself has exited.
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	e.pgid.Store(int64(cmd.Process.Pid))
	defer e.pgid.Store(0)
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	var wg sync.WaitGroup
	var outBuf, errBuf strings.Builder
	wg.Add(2)
	go func() { defer wg.Done(); e.pump(stdout, false, &outBuf) }() // per-process pump
	go func() { defer wg.Done(); e.pump(stderr, true, &errBuf) }()  // per-process pump
	wg.Wait()
	werr := cmd.Wait()
	res := result{code: cmd.ProcessState.ExitCode(), stdout: outBuf.String(), stderr: errBuf.String(),
		handler: strings.TrimPrefix(path, e.charmDir+"/")}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
			return res, fmt.Errorf("%w (%v)", errKilled, sig)
		}
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("%w: %v", errKilled, ctx.Err())
	}
	var exitErr *exec.ExitError
	if werr != nil && !errors.As(werr, &exitErr) && !errors.Is(werr, exec.ErrWaitDelay) {
		return res, werr
	}
	return res, nil
}

const maxCapture = 1 << 20

func (e *execution) pump(r io.Reader, isErr bool, buf *strings.Builder) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if e.logLine != nil {
			e.logLine(isErr, line)
		}
		if e.capture && buf.Len() < maxCapture {
			buf.WriteString(line)
			buf.WriteByte('\n')
		}
	}
	_, _ = io.Copy(io.Discard, r)
}
