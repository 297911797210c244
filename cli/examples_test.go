package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpExamplesNameFilesThatExist: a help example that names a charm,
// an archive or a bundle by a relative path names one in this
// repository (run from its root), so that a new user can paste it; a
// path of the user's own starts with ~ or /.
func TestHelpExamplesNameFilesThatExist(t *testing.T) {
	a, _, _ := testApp(t)
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.Example, "\n") {
			for _, w := range strings.Fields(line) {
				if !strings.HasPrefix(w, "./") {
					continue
				}
				checked++
				if _, err := os.Stat(filepath.Join("..", w)); err != nil {
					t.Errorf("%s's example %q names %s, which the repository lacks", c.CommandPath(), strings.TrimSpace(line), w)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.newRoot())
	if checked == 0 {
		t.Fatal("no example names a file: the test checks nothing")
	}
}
