// Command kubectl-persona renders, validates, diffs and imports
// persona-operator Personas offline; only diff --live reads the cluster, and
// only the personas' ConfigMaps. Installed on the PATH it is also a kubectl
// plugin: kubectl persona ... (docs/cli.md).
package main

import (
	"os"

	"github.com/persona-operator/persona-operator/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
