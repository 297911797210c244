package hooktools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/droverhq/drover/agent/internal/hookctx"
)

// Invocation is one tool run as the client sends it.
type Invocation struct {
	Name     string   // the tool, e.g. "relation-get"
	Args     []string // argv[1:]
	Dir      string   // the caller's working directory; absolute
	Stdin    []byte
	StdinSet bool // Stdin holds the caller's whole stdin
}

// Result is a tool's exit code and output. NeedStdin asks the caller to send
// the invocation again with its stdin; nothing has been changed.
type Result struct {
	Code      int
	Stdout    []byte
	Stderr    []byte
	NeedStdin bool
}

// MaxStdin bounds the stdin a tool accepts: the 16 MiB relation data limit
// plus room for YAML/JSON syntax.
const MaxStdin = hookctx.MaxRelationSettingsSize + 1<<20

// info is a tool's --help content.
type info struct {
	name, args, purpose, doc string
}

// tool is one hook tool: flags, then init with the positional arguments
// (errors exit 2), then run (errors exit 1).
type tool interface {
	info() info
	setFlags(fs *flagSet, e *env)
	init(e *env, args []string) error
	run(e *env) error
}

var registry = map[string]func() tool{}

func register(name string, f func() tool) { registry[name] = f }

// Names returns every tool name, sorted; one symlink is made per name.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// env is what a running tool sees.
type env struct {
	ctx    context.Context
	hc     *hookctx.Context
	dir    string
	inv    Invocation
	stdout *bytes.Buffer
	stderr *bytes.Buffer
}

var errNeedStdin = errors.New("hook tool requires stdin, none supplied")

// readFile reads path relative to the caller's directory, "-" meaning stdin.
func (e *env) readFile(path string) ([]byte, error) {
	if path == "-" {
		if !e.inv.StdinSet {
			return nil, errNeedStdin
		}
		if len(e.inv.Stdin) > MaxStdin {
			return nil, fmt.Errorf("stdin exceeds %d bytes", MaxStdin)
		}
		return e.inv.Stdin, nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxStdin+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxStdin {
		return nil, fmt.Errorf("%s exceeds %d bytes", path, MaxStdin)
	}
	return data, nil
}

// Run runs one tool invocation against a hook context.
func Run(ctx context.Context, hc *hookctx.Context, inv Invocation) Result {
	e := &env{ctx: ctx, hc: hc, dir: inv.Dir, inv: inv, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	newTool, ok := registry[inv.Name]
	if !ok {
		return Result{Code: 1, Stderr: fmt.Appendf(nil, "ERROR unknown command %q\n", inv.Name)}
	}
	t := newTool()
	fs := newFlagSet()
	t.setFlags(fs, e)
	args, err := fs.parse(inv.Args)
	if errors.Is(err, errHelp) {
		return Result{Stdout: []byte(helpText(t.info(), fs))}
	}
	if err == nil {
		err = t.init(e, args)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "ERROR %v\n", err)
		return Result{Code: 2, Stdout: e.stdout.Bytes(), Stderr: e.stderr.Bytes()}
	}
	if err := t.run(e); err != nil {
		if errors.Is(err, errNeedStdin) {
			return Result{NeedStdin: true}
		}
		fmt.Fprintf(e.stderr, "ERROR %v\n", err)
		return Result{Code: 1, Stdout: e.stdout.Bytes(), Stderr: e.stderr.Bytes()}
	}
	return Result{Stdout: e.stdout.Bytes(), Stderr: e.stderr.Bytes()}
}

func helpText(in info, fs *flagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s [options]", in.name)
	if in.args != "" {
		fmt.Fprintf(&b, " %s", in.args)
	}
	fmt.Fprintf(&b, "\n\nSummary:\n%s\n", in.purpose)
	if opts := fs.usage(); opts != "" {
		fmt.Fprintf(&b, "\nOptions:\n%s", opts)
	}
	if d := strings.TrimSpace(in.doc); d != "" {
		fmt.Fprintf(&b, "\nDetails:\n%s\n", d)
	}
	return b.String()
}

// relationIDValue is the -r/--relation flag: text up to the last ':' is
// ignored, the rest is the relation id, which must be in context.
type relationIDValue struct {
	hc *hookctx.Context
	id *int
}

func addRelationFlag(fs *flagSet, e *env, id *int, usage string) {
	*id = -1
	if hr, ok := e.hc.HookRelation(); ok {
		*id = hr.ID
	}
	fs.add(relationIDValue{e.hc, id}, false, usage, "r", "relation")
}

func (v relationIDValue) Set(s string) error {
	// As in Juju the prefix is not checked against the relation's endpoint:
	// "db:7", "7" and "anything:7" all name relation 7.
	idText := s
	if i := strings.LastIndex(s, ":"); i >= 0 {
		idText = s[i+1:]
	}
	id, err := strconv.Atoi(idText)
	if err != nil {
		return errors.New("invalid relation id")
	}
	if _, err := v.hc.Relation(id); err != nil {
		return errors.New("relation not found")
	}
	*v.id = id
	return nil
}

func (v relationIDValue) String() string {
	if *v.id < 0 {
		return ""
	}
	if r, err := v.hc.Relation(*v.id); err == nil {
		return fmt.Sprintf("%s:%d", r.Endpoint, *v.id)
	}
	return strconv.Itoa(*v.id)
}

// relationOrDefault returns the relation selected by -r, or the
// "no relation id specified" error.
func relationOrDefault(e *env, id int) (hookctx.Relation, error) {
	if id < 0 {
		return hookctx.Relation{}, errors.New("no relation id specified")
	}
	return e.hc.Relation(id)
}
