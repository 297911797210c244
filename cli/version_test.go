package cli

import (
	"encoding/json"
	"runtime"
	"testing"
)

// TestVersionAsJuju: version prints VERSION-OS-ARCH as juju version does
// ("genericlinux" for Linux), a JSON string with --format json, and the
// build details under juju version --all's keys with --all.
func TestVersionAsJuju(t *testing.T) {
	os := runtime.GOOS
	if os == "linux" {
		os = "genericlinux"
	}
	want := Version + "-" + os + "-" + runtime.GOARCH
	a, out, errb := testApp(t)
	if code := a.Run(t.Context(), []string{"version"}); code != 0 || out.String() != want+"\n" {
		t.Errorf("version: exit %d, %q (want %q) %s", code, out, want, errb)
	}
	a, out, _ = testApp(t)
	var s string
	if code := a.Run(t.Context(), []string{"version", "--format", "json"}); code != 0 || json.Unmarshal(out.Bytes(), &s) != nil || s != want {
		t.Errorf("version --format json: exit %d, %q", code, out)
	}
	a, out, _ = testApp(t)
	var all map[string]any
	if code := a.Run(t.Context(), []string{"version", "--all", "--format", "json"}); code != 0 || json.Unmarshal(out.Bytes(), &all) != nil {
		t.Fatalf("version --all --format json: exit %d, %q", code, out)
	}
	if all["version"] != want || all["compiler"] != runtime.Compiler || all["go-version"] != runtime.Version() || all["official"] != false {
		t.Errorf("version --all: %v", all)
	}
}
