package main

// The simulated agents run in a child process (agentbench re-executed with
// -agents), so the spoke's process holds only the server end of every
// connection: its memory figures are the server's alone, and each process
// needs one file descriptor per agent, not two.
//
// Protocol, one line per message, parent on the child's stdin, child on its
// stdout:
//
//	child:  connected                   every agent connected and holds its initial state
//	parent: request
//	child:  ready                       every agent has had one request (set-status) answered
//	parent: arm <v>                     wait for app-version >= v
//	child:  armed
//	child:  arrivals <ns> <ns> ...      per agent, the wall clock (UnixNano) at which
//	                                    its frame with app-version >= v arrived
//	parent: quit (or EOF)

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
)

// childConfig is what the parent passes to the agents process.
type childConfig struct {
	addr, model, caFile string
	n, conc             int
}

func (c childConfig) args() []string {
	return []string{"-agents", "-addr", c.addr, "-model", c.model, "-ca", c.caFile,
		"-n", strconv.Itoa(c.n), "-concurrency", strconv.Itoa(c.conc)}
}

// runAgents is the child's main.
func runAgents(ctx context.Context, cfg childConfig) error {
	if err := raiseNoFile(uint64(cfg.n + 500)); err != nil {
		return err
	}
	ca, err := os.ReadFile(cfg.caFile)
	if err != nil {
		return err
	}
	agents, err := dialAgents(ctx, cfg, ca)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "connected")
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "request" {
		return fmt.Errorf("want request, got %q (%v)", in.Text(), in.Err())
	}
	if err := requestOnce(ctx, agents, cfg.conc); err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	out.Flush()
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "arm":
			v, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return err
			}
			if err := reportArrivals(out, agents, v); err != nil {
				return err
			}
		case "quit":
			for _, a := range agents {
				a.close()
			}
			return nil
		default:
			return fmt.Errorf("unknown command %q", cmd)
		}
	}
	return in.Err()
}

// dialAgents connects the n agents, conc at a time, and waits until every
// one holds its initial state.
func dialAgents(ctx context.Context, cfg childConfig, ca []byte) ([]*agent, error) {
	dialer := newDialer(ca)
	agents := make([]*agent, cfg.n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.conc)
	for i := range cfg.n {
		g.Go(func() error {
			a, err := dialer.dial(gctx, cfg.addr, "machine-"+cfg.model+"-"+strconv.Itoa(i+1), secretOf(i+1))
			agents[i] = a
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, a := range agents {
		<-a.initial
	}
	return agents, nil
}

// requestOnce has every agent make one request, as a real one does on
// connecting.
func requestOnce(ctx context.Context, agents []*agent, conc int) error {
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for _, a := range agents {
		g.Go(func() error {
			a.mu.Lock()
			units := a.units
			a.mu.Unlock()
			if len(units) == 0 {
				return fmt.Errorf("an agent's machine has no unit")
			}
			return a.call(api.AgentSetStatus, api.AgentStatusParams{Unit: units[0], Kind: api.StatusKindWorkload,
				Status: api.Status{Status: "active", Message: "bench"}})
		})
	}
	return g.Wait()
}

// reportArrivals arms every agent for app-version v, says "armed", and
// writes the arrivals line once every agent has seen v.
func reportArrivals(out *bufio.Writer, agents []*agent, v int64) error {
	for _, a := range agents {
		a.arm(v)
	}
	fmt.Fprintln(out, "armed")
	out.Flush()
	deadline := time.After(2 * time.Minute)
	out.WriteString("arrivals")
	for _, a := range agents {
		select {
		case <-a.reachedCh:
		case <-deadline:
			return fmt.Errorf("not every agent saw app-version %d within 2m", v)
		}
		out.WriteByte(' ')
		out.WriteString(strconv.FormatInt(a.arrived.Load(), 10))
	}
	out.WriteByte('\n')
	out.Flush()
	return nil
}

// agentsProc is the parent's handle on the child.
type agentsProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startAgents(ctx context.Context, cfg childConfig) (*agentsProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, cfg.args()...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &agentsProc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// expect reads one line and checks its first word.
func (p *agentsProc) expect(word string) (string, error) {
	line, err := p.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("agents process: waiting for %q: %w", word, err)
	}
	got, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	if got != word {
		return "", fmt.Errorf("agents process: want %q, got %q", word, got)
	}
	return rest, nil
}

// arm tells the child to wait for app-version v.
func (p *agentsProc) arm(v int) error {
	if _, err := fmt.Fprintf(p.in, "arm %d\n", v); err != nil {
		return err
	}
	_, err := p.expect("armed")
	return err
}

// arrivals returns each agent's arrival wall clock (UnixNano).
func (p *agentsProc) arrivals() ([]int64, error) {
	rest, err := p.expect("arrivals")
	if err != nil {
		return nil, err
	}
	f := strings.Fields(rest)
	ts := make([]int64, len(f))
	for i, s := range f {
		if ts[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

func (p *agentsProc) quit() error {
	fmt.Fprintln(p.in, "quit")
	p.in.Close()
	return p.cmd.Wait()
}
