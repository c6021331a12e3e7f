// Package cli implements kubectl-persona (docs/cli.md): rendering,
// validating, diffing and importing personas offline, with the operator's
// own packages so that its output equals the operator's byte for byte. Only
// diff --live reads a cluster, and only the personas' ConfigMaps; history
// and rollback work on a Persona's revisions in the cluster.
//
// Run executes a command line in-process against the given streams and
// returns the exit status: 0 success, 1 invalid input or render failure, 2
// usage (bad flags, missing or conflicting arguments). diff has the
// statuses of kubectl diff: 0 no differences, 1 differences, 2 any error.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/internal/version"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitInvalid = 1
	ExitUsage   = 2
)

// Name is the command's name; as a kubectl plugin it runs as `kubectl persona`.
const Name = "kubectl-persona"

// Streams are a command's standard streams.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// exitError ends a command with a status. Its message, when not empty, is
// printed to stderr; a command that reported its problems itself returns one
// without a message.
type exitError struct {
	code int
	msg  string
	// usage points to the command's --help after the message.
	usage bool
}

func (e *exitError) Error() string { return e.msg }

// failed is an invalid-input or render failure (status 1).
func failed(format string, args ...any) error {
	return &exitError{code: ExitInvalid, msg: fmt.Sprintf(format, args...)}
}

// usageError is a usage error (status 2).
func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...), usage: true}
}

// reported ends a command whose problems are already printed.
func reported(code int) error { return &exitError{code: code} }

// Run runs the command line args (without the program name). Nil streams
// are the process's own.
func Run(args []string, in io.Reader, out, errOut io.Writer) int {
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	if errOut == nil {
		errOut = os.Stderr
	}
	s := &Streams{In: in, Out: out, Err: errOut}
	root := NewCommand(s)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		// Cobra's own errors: unknown commands, flags and arguments.
		ee = &exitError{code: ExitUsage, msg: unknownCommand(cmd, err.Error()), usage: true}
	}
	if ee.msg != "" {
		for line := range strings.Lines(ee.msg) {
			fmt.Fprintf(errOut, "error: %s", line)
		}
		if !strings.HasSuffix(ee.msg, "\n") {
			fmt.Fprintln(errOut)
		}
	}
	if ee.usage && cmd != nil && !strings.Contains(ee.msg, "--help") {
		fmt.Fprintf(errOut, "See '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ee.code
}

// NewCommand returns the root command writing to s.
func NewCommand(s *Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   Name,
		Short: "Render, validate, diff and import persona-operator Personas offline",
		Long: `kubectl-persona works with the Persona, PromptLayer, ClusterPromptLayer and
PromptPlatform manifests of persona-operator (prompts.persona-operator.dev/v1alpha1) without a cluster.
It uses the operator's own resolution and rendering, so what it prints is
byte for byte what the operator writes to a persona's ConfigMap.

Installed on the PATH it is also a kubectl plugin: 'kubectl persona ...'.

Exit status: 0 success, 1 invalid input or render failure, 2 usage error;
diff exits 0 without differences, 1 with differences, 2 on any error.

history and rollback work on a Persona's revisions in the cluster of the
kubeconfig context: list them, print one, and pin one or remove the pin.

launch runs a coding agent's harness (claude, codex, opencode) in an agent
pod with the persona mounted there: its prompt, model and reasoning effort.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Run gives the suggestion on the error's line (unknownCommand).
		DisableSuggestions: true,
		// completion is the command of its own, for bash, zsh and fish.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		if strings.Contains(err.Error(), "unknown flag: --context") {
			return usageError("%v: the turn context is --turn FILE; --context is a kubeconfig context, which diff --live and --cluster-inputs read", err)
		}
		return usageError("%v", err)
	})
	root.AddCommand(newRenderCommand(s), newValidateCommand(s), newDiffCommand(s), newImportCommand(s),
		newHistoryCommand(s), newRollbackCommand(s), newPromoteCommand(s), newAbortCommand(s), newLaunchCommand(s), newCompletionCommand(s), newVersionCommand(s))
	return root
}

func newVersionCommand(s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl-persona",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(s.Out, "%s %s\n", Name, version.String())
			return nil
		},
	}
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// splitPaths splits each value that is not an existing path at commas, as
// kubectl's -f does, so that -f a.yaml,b.yaml reads two files while a path
// with a comma in its name still reads as itself.
func splitPaths(values []string) []string {
	var out []string
	for _, v := range values {
		if _, err := os.Stat(v); err != nil && v != manifest.Stdin && strings.Contains(v, ",") {
			for _, p := range strings.Split(v, ",") {
				if p != "" {
					out = append(out, p)
				}
			}
			continue
		}
		out = append(out, v)
	}
	return out
}
