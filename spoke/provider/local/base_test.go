package local

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHostBase reads a Juju base from os-release files, quoted or not.
func TestHostBase(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"NAME=\"Ubuntu\"\nID=ubuntu\nVERSION_ID=\"24.04\"\n", "ubuntu@24.04"},
		{"PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_ID=\"12\"\nID=debian\n", "debian@12"},
		{"ID=arch\n", ""}, // rolling: no version
		{"", ""},
	} {
		f := filepath.Join(dir, "os-release")
		if err := os.WriteFile(f, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := hostBase(f); got != c.want {
			t.Errorf("%q: got %q, want %q", c.text, got, c.want)
		}
	}
	if got := hostBase(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing file: %q", got)
	}
}
