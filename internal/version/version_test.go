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

// Only a release's version is reported: the pseudo-version Go stamps on a
// build in a git checkout names none.
func TestReleased(t *testing.T) {
	for v, want := range map[string]bool{
		"v0.1.0": true, "v1.2.3-rc.1": true,
		"": false, "(devel)": false, "v0.0.0-20261201170759-422c6b6ba5f1": false,
		"v0.1.1-0.20261201170759-422c6b6ba5f1": false, "v0.1.0+dirty": false,
	} {
		if got := released(v); got != want {
			t.Errorf("released(%q) = %v, want %v", v, got, want)
		}
	}
}
