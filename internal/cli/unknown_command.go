package cli

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/persona-operator/persona-operator/internal/suggest"
)

// cobraUnknownCommand is cobra's error for an unknown command, with its own
// suggestions turned off (DisableSuggestions): they span several lines.
var cobraUnknownCommand = regexp.MustCompile(`^unknown command "([^"]*)" for "[^"]*"$`)

// unknownCommand puts a did-you-mean for an unknown command on the line
// that names it, from the commands of parent, or lists them.
func unknownCommand(parent *cobra.Command, msg string) string {
	m := cobraUnknownCommand.FindStringSubmatch(msg)
	if m == nil || parent == nil {
		return msg
	}
	var names []string
	for _, c := range parent.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Sprintf("%s; %s", msg, suggest.Hint(m[1], names, "the commands are"))
}
