package admission

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// An object of 250,000 unknown keys in spec and as many beside it (about
// 5 MiB of JSON) names MaxListedErrors errors of each and counts the rest:
// their did-you-mean hints, built for every key, cost a second of CPU for
// half as many; the rest of the walk is a sort and a map look-up a key (the
// time is logged, for the docs' figure).
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

	capped := Capped(field.NewPath("rest"), errs)
	last := capped[len(capped)-1]
	if len(capped) != MaxListedErrors+1 || last.Detail != fmt.Sprintf("%d more errors, not listed", len(errs)-MaxListedErrors-2+counted) {
		t.Errorf("capped to %d errors, the last %q; want %d listed and one that counts the other %d", len(capped), last.Detail,
			MaxListedErrors, len(errs)-MaxListedErrors-2+counted)
	}
}

// Lists that arrive on the webhook's port past their maximum, and
// extensions and platform keys, which have none in code, cost at most
// MaxListedErrors built errors however many items they hold: the rest are
// refused for the list's length, or counted.
func TestLongListsBuildFewErrors(t *testing.T) {
	const items = 100_000
	empties := make([]any, items)
	for i := range empties {
		empties[i] = map[string]any{}
	}
	names := make([]any, items)
	for i := range names {
		names[i] = "Not_A_Name"
	}
	platform := map[string]any{}
	for i := range items {
		platform[fmt.Sprintf("nosection%d", i)] = map[string]any{"remove": true}
	}
	expressions := make([]any, items)
	for i := range expressions {
		expressions[i] = map[string]any{"key": "Not A Key", "operator": "Sometimes"}
	}
	t.Run("selector expressions", func(t *testing.T) {
		errs := ValidateClusterPromptLayer(map[string]any{"apiVersion": "prompts.persona-operator.dev/v1alpha1", "kind": "ClusterPromptLayer",
			"metadata": map[string]any{"name": "g"}, "spec": map[string]any{"template": "x", "namespaceSelector": map[string]any{"matchExpressions": expressions}}})
		if len(errs) > MaxListedErrors+1 || len(errs) == 0 {
			t.Errorf("%d errors for %d expressions, want 1 to %d", len(errs), items, MaxListedErrors+1)
		}
	})
	t.Run("selector values", func(t *testing.T) {
		// Each bad value is an error apimachinery builds with a long
		// message: at most maxSelectorValues of them are checked.
		bad := make([]any, 1000)
		for i := range bad {
			bad[i] = "not a label value!"
		}
		expressions := make([]any, maxSelectorExpressions)
		for i := range expressions {
			expressions[i] = map[string]any{"key": "team", "operator": "In", "values": bad}
		}
		// As many labels as the webhook lets in beside them (32,768 JSON
		// tokens in all).
		labels := map[string]any{}
		for i := range 5000 {
			labels[fmt.Sprintf("not a key %d", i)] = "v"
		}
		obj := map[string]any{"apiVersion": "prompts.persona-operator.dev/v1alpha1", "kind": "ClusterPromptLayer",
			"metadata": map[string]any{"name": "g"}, "spec": map[string]any{"template": "x",
				"namespaceSelector": map[string]any{"matchExpressions": expressions}, "personaSelector": map[string]any{"matchLabels": labels}}}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		errs := ValidateClusterPromptLayer(obj)
		runtime.ReadMemStats(&after)
		if len(errs) > 2*(MaxListedErrors+1) || len(errs) == 0 {
			t.Errorf("%d errors for %d values and %d labels, want 1 to %d", len(errs), 1000*maxSelectorExpressions, len(labels), 2*(MaxListedErrors+1))
		}
		// 256 values' and 64 labels' errors at about 2 KiB each, and the
		// selectors' decoding.
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%d errors, %.1f MiB allocated", len(errs), float64(allocated)/(1<<20))
		if allocated > 16<<20 {
			t.Errorf("validating the selectors allocated %.1f MiB, want at most 16", float64(allocated)/(1<<20))
		}
	})
	sections := map[string]any{}
	for i := range items {
		sections[fmt.Sprintf("nosection%d", i)] = map[string]any{"remove": true}
	}
	t.Run("platform sections", func(t *testing.T) {
		errs := ValidatePromptPlatform(map[string]any{"apiVersion": "prompts.persona-operator.dev/v1alpha1", "kind": "PromptPlatform",
			"metadata": map[string]any{"name": "default"}, "spec": map[string]any{"sections": sections}})
		if len(errs) > MaxListedErrors+1 || len(errs) == 0 {
			t.Errorf("%d errors for %d sections, want 1 to %d", len(errs), items, MaxListedErrors+1)
		}
	})
	for _, c := range []struct {
		name string
		spec map[string]any
		most int
	}{
		{"variants", map[string]any{"variants": empties}, maxVariants + 1},
		{"inherit", map[string]any{"inherit": names}, maxInherit + 1},
		{"layers", map[string]any{"layers": empties}, maxLayers + 1},
		{"extensions", map[string]any{"systemPrompt": map[string]any{"extensions": empties}}, MaxListedErrors + 1},
		{"platform keys", map[string]any{"systemPrompt": map[string]any{"platform": platform}}, MaxListedErrors + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := ValidatePersona(map[string]any{"apiVersion": "prompts.persona-operator.dev/v1alpha1", "kind": "Persona",
				"metadata": map[string]any{"name": "p"}, "spec": c.spec})
			if len(errs) > c.most || len(errs) == 0 {
				t.Errorf("%d errors for %d items, want 1 to %d", len(errs), items, c.most)
			}
		})
	}
}

// TestPlatformEntriesBuildFewErrors: every error of a platform's entries,
// not only its unknown keys, is listed up to MaxListedErrors and counted
// past it, and no template is parsed once the list is full.
func TestPlatformEntriesBuildFewErrors(t *testing.T) {
	const items = 20_000
	sections := map[string]any{}
	for i := range items {
		sections[fmt.Sprintf("nosection%d", i)] = map[string]any{"replace": "{{ .Harness }}", "remove": true}
	}
	errs := ValidatePromptPlatform(map[string]any{"apiVersion": "prompts.persona-operator.dev/v1alpha1", "kind": "PromptPlatform",
		"metadata": map[string]any{"name": "default"}, "spec": map[string]any{"sections": sections}})
	if most := 2 * (MaxListedErrors + 1); len(errs) > most || len(errs) == 0 {
		t.Errorf("%d errors for %d sections of two errors each, want 1 to %d", len(errs), items, most)
	}
}

// TestTemplatesShareABudgetOfActionBytes: an object's templates together
// have at most MaxActionBytes inside actions checked; past it, each is
// refused unparsed, so a Persona of many templates of the densest actions
// costs a bounded parse.
func TestTemplatesShareABudgetOfActionBytes(t *testing.T) {
	for src, want := range map[string]int{"": 0, "prose": 0, "a {{ b }} c": 7, "{{x": 3, "{{a}}{{b}}": 10,
		// Strings, character constants and comments may hold }}: the
		// action goes on past them, as the lexer reads it.
		`{{ "}}" }}`: 10, "{{ `}}` }}": 10, `{{ '}' }}`: 9, `{{ "\"}}" }}`: 12, `{{/* }} */}}`: 12, `{{- /* }} */ -}} x`: 16,
		`{{ "}} unended`: 14, "{{ `}} unended": 14,
	} {
		if got := actionBytes(src); got != want {
			t.Errorf("actionBytes(%q) = %d, want %d", src, got, want)
		}
	}
	// A string of }} first does not hide the rest of the action.
	hidden := `{{print "}}" ` + strings.Repeat("((((1))))", 1000) + `}}`
	if got := actionBytes(hidden); got != len(hidden) {
		t.Errorf("an action that opens with a string of }}: %d of its %d bytes counted", got, len(hidden))
	}
	dense := strings.Repeat("{{.Harness}}", (64<<10)/len("{{.Harness}}"))
	extensions := make([]any, 10)
	for i := range extensions {
		extensions[i] = map[string]any{"id": fmt.Sprintf("ext_%d", i), "template": dense}
	}
	start := time.Now()
	errs := ValidatePersona(map[string]any{"apiVersion": "prompts.persona-operator.dev/v1alpha1", "kind": "Persona",
		"metadata": map[string]any{"name": "p"}, "spec": map[string]any{"prompt": "x", "systemPrompt": map[string]any{"extensions": extensions}}})
	took := time.Since(start)
	checked := MaxActionBytes / len(dense)
	if len(errs) != len(extensions)-checked {
		t.Errorf("%d errors for %d templates of %d bytes of actions, want one for each past the first %d: %v", len(errs), len(extensions), len(dense), checked, errs)
	}
	for _, err := range errs {
		if !strings.Contains(err.Detail, "not checked") {
			t.Errorf("%s: %s, want it refused unchecked", err.Field, err.Detail)
		}
	}
	t.Logf("%d templates of %d KiB of actions checked in %v", checked, len(dense)>>10, took)
}
