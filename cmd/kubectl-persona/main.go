// Command kubectl-persona renders, validates and imports persona-operator
// Personas offline. Installed on the PATH it is also a kubectl plugin:
// kubectl persona ...
package main

import (
	"os"

	"github.com/persona-operator/persona-operator/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
