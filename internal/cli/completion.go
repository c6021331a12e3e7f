package cli

import (
	"github.com/spf13/cobra"
)

// shells are the shells completion writes scripts for.
var shells = []string{"bash", "zsh", "fish"}

func newCompletionCommand(s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print the completion script of kubectl-persona for bash, zsh or fish.
Load it in the current shell, or install it where the shell reads
completions. For 'kubectl persona' to complete too, put an executable
kubectl_complete-persona on the PATH that runs 'kubectl-persona __complete "$@"'
(docs/cli.md#completion).`,
		Example: `  source <(kubectl-persona completion bash)
  kubectl-persona completion zsh > "${fpath[1]}/_kubectl-persona"
  kubectl-persona completion fish > ~/.config/fish/completions/kubectl-persona.fish`,
		ValidArgs: shells,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("%s takes one shell: bash, zsh or fish", cmd.CommandPath())
			}
			return cobra.OnlyValidArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(s.Out, true)
			case "zsh":
				return root.GenZshCompletion(s.Out)
			}
			return root.GenFishCompletion(s.Out, true)
		},
	}
}
