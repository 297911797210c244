package cli

import (
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/cli/internal/modelcmd"
)

func (a *App) versionCmd() *cobra.Command {
	var all bool
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client version",
		Long: `Prints the client's version as Juju prints its own: VERSION-OS-ARCH, with
"genericlinux" for Linux. --all adds the build details (git commit and
tree state, compiler, Go version); --format json or yaml for scripts.`,
		Example: "  drover version\n  drover version --all\n  drover version --format json",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			return a.runVersion(format.Value, all)
		},
	}
	addVersionFlags(cmd, &all, &format)
	return cmd
}

func (a *App) completionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Prints the completion script for a shell. Load it into the current shell,
or install it where the shell looks for completions.`,
		Example: `  source <(drover completion bash)
  drover completion zsh > "${fpath[1]}/_drover"
  drover completion fish > ~/.config/fish/completions/drover.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args:      modelcmd.ExactArgs(1, "a shell: bash, zsh or fish"),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(a.Stdout, true)
			case "zsh":
				return root.GenZshCompletion(a.Stdout)
			case "fish":
				return root.GenFishCompletion(a.Stdout, true)
			}
			return modelcmd.Usagef("completion: unsupported shell %q: want bash, zsh or fish", args[0])
		},
	}
}
