package deptest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

const module = "github.com/droverhq/drover"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
	Module     *struct{ Path string }
}

func (p *pkg) own() bool { return under(p.ImportPath, module) }

// under reports whether path is prefix or a package below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// list runs `go list -json` with args and decodes its packages.
func list(t *testing.T, args ...string) []*pkg {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-json=ImportPath,Imports,Standard,Module"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []*pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

// thirdPartyTesting are the packages outside the project, linked by
// droverd, that import "testing" themselves: raft ships its test harness in
// package raft, and OpenFGA's embedded server pulls in its test fixtures.
// Any other route by which "testing" reaches a binary fails the test.
var thirdPartyTesting = []string{
	"github.com/hashicorp/raft",
	"github.com/openfga/openfga/cmd/util",
	"github.com/openfga/openfga/pkg/testfixtures/storage",
	"github.com/openfga/openfga/pkg/testutils",
	"github.com/Yiling-J/theine-go/internal",
}

func TestBinariesLinkNoTestSupport(t *testing.T) {
	for _, bin := range []string{"cmd/droverd", "cmd/drover", "cmd/drover-agent"} {
		t.Run(bin, func(t *testing.T) {
			for _, p := range list(t, "-deps", module+"/"+bin) {
				if under(p.ImportPath, module+"/tests") || under(p.ImportPath, "go.uber.org/goleak") {
					t.Errorf("%s links test support %s", bin, p.ImportPath)
				}
				if slices.Contains(p.Imports, "testing") && (p.own() || !slices.Contains(thirdPartyTesting, p.ImportPath)) {
					t.Errorf("%s links \"testing\" through %s", bin, p.ImportPath)
				}
			}
		})
	}
}

// importRule forbids packages under from importing anything under one of
// banned.
type importRule struct {
	under  string
	banned []string
}

func TestLayering(t *testing.T) {
	rules := []importRule{
		{"hub", []string{"spoke"}},
		{"spoke", []string{"hub"}},
		{"agent", []string{"hub", "spoke"}},
	}
	for _, p := range list(t, module+"/...") {
		for _, r := range rules {
			if !under(p.ImportPath, module+"/"+r.under) {
				continue
			}
			for _, imp := range p.Imports {
				for _, b := range r.banned {
					if under(imp, module+"/"+b) {
						t.Errorf("%s imports %s: %s/... must not import %s/...", p.ImportPath, imp, r.under, b)
					}
				}
			}
		}
	}
}

// TestClientImports: the client talks to controllers and hubs only through
// api, so nothing it links may be server code, and the project packages
// cli imports are api, charm and leaf internal packages.
func TestClientImports(t *testing.T) {
	all := map[string]*pkg{}
	for _, p := range list(t, module+"/...") {
		all[p.ImportPath] = p
	}
	leaf := func(path string) bool {
		p := all[path]
		return p != nil && !slices.ContainsFunc(p.Imports, func(imp string) bool { return under(imp, module) })
	}
	for path, p := range all {
		if !under(path, module+"/cli") {
			continue
		}
		for _, imp := range p.Imports {
			if !under(imp, module) || under(imp, module+"/cli") {
				continue
			}
			ok := under(imp, module+"/api") || under(imp, module+"/charm") || (under(imp, module+"/internal") && leaf(imp))
			if !ok {
				t.Errorf("%s imports %s: the client imports of the project only api, charm and leaf internal packages", path, imp)
			}
		}
	}
	for _, p := range list(t, "-deps", module+"/cli/...", module+"/cmd/drover") {
		for _, banned := range []string{"spoke", "hub", "agent"} {
			if under(p.ImportPath, module+"/"+banned) {
				t.Errorf("the client links server package %s", p.ImportPath)
			}
		}
	}
}
