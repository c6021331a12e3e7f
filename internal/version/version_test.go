package version

import "testing"

func TestStringPrefersTheBuildsVersion(t *testing.T) {
	saved := Version
	defer func() { Version = saved }()
	Version = "v1.2.3"
	if got := String(); got != "v1.2.3" {
		t.Errorf("String() = %q with Version set to v1.2.3", got)
	}
	Version = ""
	// A test binary has no module version, so it reports dev.
	if got := String(); got != "dev" {
		t.Errorf("String() = %q with no version set", got)
	}
}
