// Package version holds the operator's version. make image and the
// Dockerfile set it:
// go build -ldflags "-X github.com/persona-operator/persona-operator/internal/version.Version=v0.1.0".
package version

import (
	"runtime/debug"
	"strings"
	"sync"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// Version is the release the binary was built from, as the build set it.
var Version string

// String is the version the binary reports: the one the build set, else the
// release of a `go install …@v0.1.0`, else "dev". A build in a git checkout
// carries a pseudo-version of its commit (Go stamps one from the checkout,
// depending on who owns it), which names no release: it reports "dev" too.
func String() string {
	if Version != "" {
		return Version
	}
	return builtVersion()
}

// builtVersion is the release Go stamped on the binary, else "dev", read
// once: every revision's record names the version, and reading the build
// info parses it whole (about 12 KB of garbage a call).
var builtVersion = sync.OnceValue(func() string {
	if info, ok := debug.ReadBuildInfo(); ok && released(info.Main.Version) {
		return info.Main.Version
	}
	return "dev"
})

// released reports whether v is a release's version: not empty, "(devel)",
// a pseudo-version or a build of a modified checkout.
func released(v string) bool {
	return semver.IsValid(v) && !module.IsPseudoVersion(v) && !strings.HasSuffix(v, "+dirty")
}
