package cli

import (
	"io"

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
				if err := root.GenBashCompletionV2(a.Stdout, true); err != nil {
					return err
				}
				_, err := io.WriteString(a.Stdout, bashWordsFallback)
				return err
			case "zsh":
				return root.GenZshCompletion(a.Stdout)
			case "fish":
				return root.GenFishCompletion(a.Stdout, true)
			}
			return modelcmd.Usagef("completion: unsupported shell %q: want bash, zsh or fish", args[0])
		},
	}
}

// bashWordsFallback completes the bash script on systems without the
// bash-completion package, whose _get_comp_words_by_ref the script calls:
// this one takes the words of the line up to the cursor, split at blanks
// (so "-m ctl:model" stays one word, as the package's "-n =:" keeps it).
const bashWordsFallback = `
# Without the bash-completion package: a minimal _get_comp_words_by_ref.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref()
{
    local line=${COMP_LINE:0:COMP_POINT}
    read -ra words <<< "$line"
    if [[ -z $line || $line == *[[:blank:]] ]]; then
        words+=("")
    fi
    cword=$((${#words[@]}-1))
    cur=${words[cword]}
    prev=${words[cword-1]}
}
fi
`
