// Package version holds the operator's version, which the build sets:
// go build -ldflags "-X github.com/persona-operator/persona-operator/internal/version.Version=v0.1.0".
package version

// Version is the release the binary was built from; "dev" when the build
// did not set it.
var Version = "dev"
