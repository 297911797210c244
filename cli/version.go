package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// jujuVersion is the client's version as Juju prints its own:
// VERSION-OSTYPE-ARCH, with Juju's "genericlinux" for Linux.
func jujuVersion() string {
	os := runtime.GOOS
	if os == "linux" {
		os = "genericlinux"
	}
	return Version + "-" + os + "-" + runtime.GOARCH
}

// versionDetail is `version --all`, with juju version --all's keys.
type versionDetail struct {
	Version      string `json:"version"`
	GitCommit    string `json:"git-commit,omitempty"`
	GitTreeState string `json:"git-tree-state,omitempty"`
	Compiler     string `json:"compiler"`
	GoVersion    string `json:"go-version"`
	Official     bool   `json:"official"`
}

func buildDetail() versionDetail {
	d := versionDetail{Version: jujuVersion(), Compiler: runtime.Compiler, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				d.GitCommit = s.Value
			case "vcs.modified":
				d.GitTreeState = "clean"
				if s.Value == "true" {
					d.GitTreeState = "dirty"
				}
			}
		}
	}
	return d
}

// runVersion is 'drover version [--all] [--format]'.
func (a *App) runVersion(format string, all bool) error {
	var v any = jujuVersion()
	if all {
		v = buildDetail()
	}
	switch {
	case format != "smart":
		return modelcmd.WriteFormatted(a.Stdout, format, v)
	case all:
		return modelcmd.WriteYAML(a.Stdout, v)
	}
	_, err := fmt.Fprintln(a.Stdout, v)
	return err
}

// addVersionFlags adds version's --all and --format (smart: the version
// as text, or --all as YAML, as Juju's default).
func addVersionFlags(cmd *cobra.Command, all *bool, format *modelcmd.FormatOpt) {
	cmd.Flags().BoolVar(all, "all", false, "print the build details: version, git commit, compiler, Go version")
	format.Add(cmd, "smart", "smart", "json", "yaml")
}
