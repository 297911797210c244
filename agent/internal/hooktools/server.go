package hooktools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"

	"github.com/droverhq/drover/agent/internal/hookctx"
)

// Request is one tool invocation on the wire: a JSON object per line.
// Stdin is base64 in JSON ([]byte); StdinSet says it was sent.
type Request struct {
	ContextID string   `json:"context-id"`
	Dir       string   `json:"dir"`
	Command   string   `json:"command"`
	Args      []string `json:"args"`
	Stdin     []byte   `json:"stdin,omitempty"`
	StdinSet  bool     `json:"stdin-set,omitempty"`
}

// Response answers a Request. Error means the request was rejected before
// any tool ran (unknown context, bad directory); the client prints it and
// exits 1. NeedStdin asks for the request again with stdin.
type Response struct {
	Code      int    `json:"code"`
	Stdout    []byte `json:"stdout,omitempty"`
	Stderr    []byte `json:"stderr,omitempty"`
	NeedStdin bool   `json:"need-stdin,omitempty"`
	Error     string `json:"error,omitempty"`
}

// maxRequest bounds one request line: base64 stdin plus argv.
const maxRequest = MaxStdin/3*4 + 8<<20

// Server serves tool invocations for the active hook context over a
// listener (a unix socket in practice). Only one context is active at a
// time; requests for any other context id are rejected.
type Server struct {
	ln net.Listener

	mu     sync.Mutex
	active *activeContext
	conns  map[net.Conn]struct{}
}

type activeContext struct {
	id  string
	hc  *hookctx.Context
	run sync.Mutex // one command at a time per context
}

// Listen opens the tool socket, e.g. Listen("unix", "/path/agent.socket").
func Listen(network, address string) (*Server, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, fmt.Errorf("hooktools: listen: %w", err)
	}
	return &Server{ln: ln, conns: map[net.Conn]struct{}{}}, nil
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Activate makes hc the context served under id until the returned
// function is called. The uniter activates a context just before starting
// the hook process and deactivates it once the process has exited.
func (s *Server) Activate(id string, hc *hookctx.Context) (deactivate func()) {
	a := &activeContext{id: id, hc: hc}
	s.mu.Lock()
	s.active = a
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.active == a {
			s.active = nil
		}
		s.mu.Unlock()
		a.run.Lock() // wait for a command still running
		a.run.Unlock()
	}
}

// Serve accepts connections until ctx is done, then closes the listener and
// every open connection and returns once their goroutines have ended.
func (s *Server) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() {
		s.ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	})
	defer stop()
	defer wg.Wait()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("hooktools: accept: %w", err)
		}
		s.mu.Lock()
		s.conns[conn] = struct{}{}
		s.mu.Unlock()
		wg.Add(1)
		go func() { // per-connection pump
			defer wg.Done()
			s.serveConn(ctx, conn)
			s.mu.Lock()
			delete(s.conns, conn)
			s.mu.Unlock()
			conn.Close()
		}()
	}
}

func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	r := bufio.NewReader(io.LimitReader(conn, maxRequest))
	enc := json.NewEncoder(conn)
	dec := json.NewDecoder(r)
	for {
		var req Request
		if err := dec.Decode(&req); err != nil {
			if !errors.Is(err, io.EOF) {
				_ = enc.Encode(Response{Code: 1, Error: "bad request: " + err.Error()})
			}
			return
		}
		if err := enc.Encode(s.handle(ctx, req)); err != nil {
			return
		}
	}
}

func (s *Server) handle(ctx context.Context, req Request) Response {
	s.mu.Lock()
	a := s.active
	s.mu.Unlock()
	switch {
	case a == nil || a.id != req.ContextID:
		return Response{Code: 1, Error: fmt.Sprintf("bad request: unknown context id %q", req.ContextID)}
	case !filepath.IsAbs(req.Dir):
		return Response{Code: 1, Error: fmt.Sprintf("bad request: working directory %q is not absolute", req.Dir)}
	}
	a.run.Lock()
	defer a.run.Unlock()
	s.mu.Lock()
	still := s.active == a
	s.mu.Unlock()
	if !still {
		return Response{Code: 1, Error: fmt.Sprintf("bad request: unknown context id %q", req.ContextID)}
	}
	res := Run(ctx, a.hc, Invocation{Name: req.Command, Args: req.Args, Dir: req.Dir, Stdin: req.Stdin, StdinSet: req.StdinSet})
	return Response{Code: res.Code, Stdout: res.Stdout, Stderr: res.Stderr, NeedStdin: res.NeedStdin}
}
