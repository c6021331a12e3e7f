package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The validate line that docs/cli.md and the README show for the samples is
// the one validate prints for them.
func TestDocsShowValidateOfTheSamples(t *testing.T) {
	r := run(t, "", "validate", "-f", "../../config/samples")
	if r.code != ExitOK {
		t.Fatalf("the samples do not validate: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := strings.TrimSuffix(r.stdout, "\n")

	cli, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("\\$ kubectl persona validate -f config/samples\n(.*)\n").FindSubmatch(cli)
	if m == nil || string(m[1]) != got {
		t.Errorf("docs/cli.md shows %q for the samples; validate prints %q", m, got)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`"+got+"`") {
		t.Errorf("README.md does not show %q", got)
	}
}
