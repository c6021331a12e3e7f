// Package version holds the operator's version. make image and the
// Dockerfile set it:
// go build -ldflags "-X github.com/persona-operator/persona-operator/internal/version.Version=v0.1.0".
package version

import "runtime/debug"

// Version is the release the binary was built from, as the build set it.
var Version string

// String is the version the binary reports: the one the build set, else the
// module version of a `go install …@v0.1.0`, else "dev".
func String() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}
