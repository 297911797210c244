package model

import (
	"strings"
	"testing"
)

// TestDestroyModelStorageFlags: Juju's storage flags are accepted, one at
// a time.
func TestDestroyModelStorageFlags(t *testing.T) {
	a := &Commands{}
	cmd := a.DestroyModelCmd()
	if err := cmd.ParseFlags([]string{"--no-prompt", "--destroy-storage", "--force"}); err != nil {
		t.Fatalf("--no-prompt --destroy-storage --force: %v", err)
	}
	cmd = a.DestroyModelCmd()
	cmd.SetArgs([]string{"m", "--destroy-storage", "--release-storage"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "cannot both be given") {
		t.Errorf("both storage flags: %v", err)
	}
}
