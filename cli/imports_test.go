package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoServerImports enforces the design rule that the client talks to
// controllers only through api: nothing it or its packages link may be
// server code.
func TestNoServerImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/droverhq/drover/cli/...", "github.com/droverhq/drover/cmd/drover").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"spoke", "hub", "agent"} {
			prefix := "github.com/droverhq/drover/" + banned
			if pkg == prefix || strings.HasPrefix(pkg, prefix+"/") {
				t.Errorf("the client links server package %s", pkg)
			}
		}
	}
}
