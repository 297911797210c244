package spoke

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/droverhq/drover/api"
)

// EnableHA grows a locally bootstrapped controller to n voting nodes by
// starting new `droverd spoke --join` processes beside this node's data dir
// (as `juju enable-ha` adds controller machines). Each new node runs in its
// own session so it outlives the request, and records its PID in its data
// dir (droverd.pid) so that destroy-controller can stop it.
func (s *Server) EnableHA(ctx context.Context, n int) (*api.ControllerInfo, error) {
	if n != 3 && n != 5 && n != 7 {
		return nil, api.Errorf(api.CodeInvalid, "enable-ha: the number of controller nodes must be 3, 5 or 7, not %d", n)
	}
	servers, err := s.node.Servers()
	if err != nil {
		return nil, api.Errorf(api.CodeUnavailable, "raft configuration: %v", err)
	}
	have := 0
	for _, sv := range servers {
		if sv.Voter {
			have++
		}
	}
	if have > n {
		return nil, api.Errorf(api.CodeInvalid, "enable-ha: the controller already has %d nodes; it cannot shrink to %d", have, n)
	}
	exe := s.cfg.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	host, _, err := net.SplitHostPort(s.cfg.Advertise)
	if err != nil {
		return nil, err
	}
	for i := have; i < n; i++ {
		tok, err := s.NewJoinToken(ctx, 10*time.Minute)
		if err != nil {
			return nil, err
		}
		if err := s.spawnNode(exe, host, tok.Token); err != nil {
			return nil, api.Errorf(api.CodeInternal, "enable-ha: start node: %v", err)
		}
	}
	// Wait until every new node votes.
	for {
		servers, err := s.node.Servers()
		if err == nil {
			v := 0
			for _, sv := range servers {
				if sv.Voter {
					v++
				}
			}
			if v >= n {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil, api.Errorf(api.CodeTimeout, "enable-ha: nodes started but not all joined yet; check `drover show-controller`")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return s.waitServing(ctx, n)
}

// waitServing waits until n nodes are registered and each has applied
// every command committed when the wait began: then every node serves
// reads without relaying them, and enable-ha answers (ADR 0028).
func (s *Server) waitServing(ctx context.Context, n int) (*api.ControllerInfo, error) {
	target, err := s.WaitRead(ctx, 0, true)
	if err != nil {
		return nil, err
	}
	for {
		info, err := s.ControllerProgress(ctx)
		if err == nil && caughtUp(info, n, target) {
			return info, nil
		}
		select {
		case <-ctx.Done():
			return nil, api.Errorf(api.CodeTimeout, "enable-ha: the new nodes vote but have not caught up yet; 'drover show-controller' shows their lag")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// caughtUp reports whether info lists n nodes, each reachable and at or
// past target.
func caughtUp(info *api.ControllerInfo, n int, target uint64) bool {
	if len(info.Nodes) < n {
		return false
	}
	for _, nd := range info.Nodes {
		if nd.Unreachable || nd.AppliedIndex < target {
			return false
		}
	}
	return true
}

func (s *Server) spawnNode(exe, host, token string) error {
	api, err := freeLocalPort(host)
	if err != nil {
		return err
	}
	raft, err := freeLocalPort(host)
	if err != nil {
		return err
	}
	dir := filepath.Join(filepath.Dir(s.cfg.DataDir), fmt.Sprintf("%s-ha-%s", filepath.Base(s.cfg.DataDir), randomHex(3)))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "droverd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "spoke", "--data-dir", dir,
		"--listen", net.JoinHostPort(host, strconv.Itoa(api)),
		"--raft-listen", net.JoinHostPort(host, strconv.Itoa(raft)),
		"--join", s.cfg.Advertise, "--join-token", token)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	s.spawned.add(pid)
	_ = cmd.Process.Release() // reaped by pid (spawned); exit status is in its log
	s.logger.Info("started controller node", "dir", dir, "pid", pid)
	return os.WriteFile(filepath.Join(dir, "droverd.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o600)
}

func freeLocalPort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
