package hooktools

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
)

// Main is a hook tool process: cmd/drover-agent calls it when started
// through a symlink named after a tool. It forwards argv, the working
// directory and (on demand) stdin to the agent named by the environment,
// prints the agent's answer and returns the exit code. getenv is
// os.Getenv in production.
func Main(argv0 string, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ERROR "+format+"\n", a...)
		return 1
	}
	name := filepath.Base(argv0)
	if _, ok := registry[name]; !ok {
		return fail("unknown command %q", name)
	}
	req := Request{Command: name, Args: args, ContextID: getenv("JUJU_CONTEXT_ID")}
	network, address := getenv("JUJU_AGENT_SOCKET_NETWORK"), getenv("JUJU_AGENT_SOCKET_ADDRESS")
	switch {
	case req.ContextID == "":
		return fail("JUJU_CONTEXT_ID not set")
	case network == "":
		return fail("JUJU_AGENT_SOCKET_NETWORK not set")
	case address == "":
		return fail("JUJU_AGENT_SOCKET_ADDRESS not set")
	}
	dir, err := os.Getwd()
	if err != nil {
		return fail("cannot get working directory: %v", err)
	}
	if req.Dir, err = filepath.Abs(dir); err != nil {
		return fail("cannot get working directory: %v", err)
	}
	resp, err := call(network, address, req, stdin)
	if err != nil {
		return fail("%v", err)
	}
	if resp.Error != "" {
		return fail("%s", resp.Error)
	}
	stdout.Write(resp.Stdout)
	stderr.Write(resp.Stderr)
	return resp.Code
}

func call(network, address string, req Request, stdin io.Reader) (Response, error) {
	conn, err := net.Dial(network, address)
	if err != nil {
		return Response{}, fmt.Errorf("cannot connect to the agent: %w", err)
	}
	defer conn.Close()
	enc, dec := json.NewEncoder(conn), json.NewDecoder(bufio.NewReader(conn))
	var resp Response
	if err := roundTrip(enc, dec, req, &resp); err != nil || !resp.NeedStdin {
		return resp, err
	}
	// The tool needs stdin: only now is it read, so a tool run with stdin
	// attached to something that never ends does not hang otherwise.
	req.StdinSet = true
	if stdin != nil {
		data, err := io.ReadAll(io.LimitReader(stdin, MaxStdin+1))
		if err != nil {
			return Response{}, fmt.Errorf("cannot read stdin: %w", err)
		}
		if len(data) > MaxStdin {
			return Response{}, fmt.Errorf("stdin exceeds %d bytes", MaxStdin)
		}
		req.Stdin = data
	}
	resp = Response{}
	err = roundTrip(enc, dec, req, &resp)
	if err == nil && resp.NeedStdin {
		err = errors.New("agent asked for stdin twice")
	}
	return resp, err
}

func roundTrip(enc *json.Encoder, dec *json.Decoder, req Request, resp *Response) error {
	if err := enc.Encode(req); err != nil {
		return fmt.Errorf("cannot send to the agent: %w", err)
	}
	if err := dec.Decode(resp); err != nil {
		return fmt.Errorf("cannot read the agent's answer: %w", err)
	}
	return nil
}

// InstallSymlinks makes toolsDir hold one symlink per tool name pointing at
// agentBinary, replacing whatever was there under those names.
func InstallSymlinks(toolsDir, agentBinary string) error {
	if err := os.MkdirAll(toolsDir, 0o755); err != nil {
		return err
	}
	for _, name := range Names() {
		link := filepath.Join(toolsDir, name)
		if target, err := os.Readlink(link); err == nil && target == agentBinary {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("hooktools: replace %s: %w", link, err)
		}
		if err := os.Symlink(agentBinary, link); err != nil {
			return fmt.Errorf("hooktools: %w", err)
		}
	}
	return nil
}

// IsTool reports whether argv0's base name is a hook tool, for argv[0]
// dispatch in cmd/drover-agent.
func IsTool(argv0 string) bool {
	return slices.Contains(Names(), filepath.Base(argv0))
}
