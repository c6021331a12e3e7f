package admission

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// An object of 250,000 unknown keys in spec and as many beside it (about
// 5 MiB of JSON) names MaxListedErrors errors of each and counts the rest:
// their did-you-mean hints, built for every key, cost a second of CPU.
func TestManyUnknownKeysAreCountedNotBuilt(t *testing.T) {
	const unknown = 250_000
	spec := map[string]any{}
	obj := map[string]any{"apiVersion": "prompts.persona-operator.dev/v1alpha1", "kind": "Persona",
		"metadata": map[string]any{"name": "p", "namespace": "ns"}, "spec": spec}
	for i := range unknown {
		spec[fmt.Sprintf("k%d", i)] = 1
		obj[fmt.Sprintf("k%d", i)] = 1
	}
	start := time.Now()
	errs := ValidatePersona(obj)
	took := time.Since(start)
	t.Logf("%d unknown keys validated in %v", 2*unknown, took)

	var unknownNamed, counted int
	for _, err := range errs {
		switch {
		case strings.HasPrefix(err.Detail, "unknown field"):
			unknownNamed++
		case err.Type == field.ErrorTypeForbidden && strings.HasSuffix(err.Detail, "more errors, not listed"):
			var n int
			if _, scanErr := fmt.Sscanf(err.Detail, "%d more errors", &n); scanErr != nil {
				t.Fatalf("%q does not count: %v", err.Detail, scanErr)
			}
			counted += n
		}
	}
	if unknownNamed != 2*MaxListedErrors || counted != 2*(unknown-MaxListedErrors) {
		t.Errorf("%d unknown keys named and %d counted; want %d named (%d in spec, as many beside it) and %d counted",
			unknownNamed, counted, 2*MaxListedErrors, MaxListedErrors, 2*(unknown-MaxListedErrors))
	}
	// The rest of the walk is a sort and a map lookup a key.
	if took > 2*time.Second {
		t.Errorf("validating %d unknown keys took %v", 2*unknown, took)
	}

	capped := Capped(field.NewPath("rest"), errs)
	last := capped[len(capped)-1]
	if len(capped) != MaxListedErrors+1 || last.Detail != fmt.Sprintf("%d more errors, not listed", len(errs)-MaxListedErrors-2+counted) {
		t.Errorf("capped to %d errors, the last %q; want %d listed and one that counts the other %d", len(capped), last.Detail,
			MaxListedErrors, len(errs)-MaxListedErrors-2+counted)
	}
}
