package resolve_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

func harnessPrompt(v v1alpha1.HarnessPrompt) *v1alpha1.HarnessPrompt { return &v }

// platformAllowingReplace is the PromptPlatform default with
// spec.harnessPrompt.allowReplace set to allow.
func platformAllowingReplace(allow *bool) *v1alpha1.PromptPlatform {
	return &v1alpha1.PromptPlatform{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PromptPlatformName},
		Spec: v1alpha1.PromptPlatformSpec{HarnessPrompt: &v1alpha1.HarnessPromptPolicy{AllowReplace: allow}}}
}

// harnessPrompt is inherited as harness is: the last persona of the chain
// that sets it wins, unset throughout is empty (keep); a variant's is its
// own, empty when it sets none (personas.md#harness-prompt).
func TestHarnessPromptIsInherited(t *testing.T) {
	base := persona("base", v1alpha1.PersonaSpec{HarnessPrompt: harnessPrompt(v1alpha1.HarnessPromptReplace)})
	keeps := persona("keeps", v1alpha1.PersonaSpec{Inherit: inherit("base"), HarnessPrompt: harnessPrompt(v1alpha1.HarnessPromptKeep)})
	for _, tc := range []struct {
		name string
		p    *v1alpha1.Persona
		want string
	}{
		{"set by no persona", persona("p", v1alpha1.PersonaSpec{}), ""},
		{"inherited", persona("p", v1alpha1.PersonaSpec{Inherit: inherit("base")}), "replace"},
		{"set by the persona over its parent's", persona("p", v1alpha1.PersonaSpec{Inherit: inherit("base"), HarnessPrompt: harnessPrompt("keep")}), "keep"},
		{"the last parent that sets it", persona("p", v1alpha1.PersonaSpec{Inherit: inherit("keeps")}), "keep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := resolveOK(t, set(base, keeps), tc.p)
			if got := res.Bundle.Persona.HarnessPrompt; got != tc.want {
				t.Errorf("harnessPrompt %q, want %q", got, tc.want)
			}
		})
	}
	p := persona("p", v1alpha1.PersonaSpec{Inherit: inherit("base"), Variants: []v1alpha1.Variant{
		{Name: "kept", HarnessPrompt: v1alpha1.HarnessPromptKeep}, {Name: "plain", Model: "m"},
	}})
	want := []render.Variant{{Name: "kept", HarnessPrompt: "keep"}, {Name: "plain", Model: "m"}}
	if got := resolveOK(t, set(base), p).Bundle.Variants; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("variants %+v, want %+v", got, want)
	}
}

// A PromptPlatform with allowReplace: false fails every Persona whose own,
// inherited or variant harnessPrompt is replace, naming each field; one
// that allows it, or none at all, does not.
func TestPlatformForbidsHarnessPromptReplace(t *testing.T) {
	base := persona("base", v1alpha1.PersonaSpec{HarnessPrompt: harnessPrompt(v1alpha1.HarnessPromptReplace)})
	forbidding := platformAllowingReplace(ptr(false))
	const rule = " is forbidden by PromptPlatform default (its spec.harnessPrompt.allowReplace is false); set keep, or leave it unset"
	for _, tc := range []struct {
		name string
		p    *v1alpha1.Persona
		want string // the error; empty: it resolves
	}{
		{"its own", persona("p", v1alpha1.PersonaSpec{HarnessPrompt: harnessPrompt("replace")}),
			"spec.harnessPrompt: replace" + rule},
		{"inherited, and a variant's", persona("p", v1alpha1.PersonaSpec{Inherit: inherit("base"), Variants: []v1alpha1.Variant{
			{Name: "a", Model: "m"}, {Name: "b", HarnessPrompt: "replace"}}}),
			`spec.harnessPrompt: replace, inherited from persona "base",` + rule + "; spec.variants[1].harnessPrompt: replace" + rule},
		{"a variant's alone", persona("p", v1alpha1.PersonaSpec{Variants: []v1alpha1.Variant{{Name: "a", HarnessPrompt: "replace"}}}),
			"spec.variants[0].harnessPrompt: replace" + rule},
		{"inherited and overridden with keep", persona("p", v1alpha1.PersonaSpec{Inherit: inherit("base"), HarnessPrompt: harnessPrompt("keep")}), ""},
		{"keep in a variant of a replacing persona", persona("p", v1alpha1.PersonaSpec{HarnessPrompt: harnessPrompt("replace"),
			Variants: []v1alpha1.Variant{{Name: "a", HarnessPrompt: "keep"}}}),
			"spec.harnessPrompt: replace" + rule},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := resolve.Resolve(context.Background(), set(base, forbidding), tc.p)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("resolve: %v", err)
				}
				return
			}
			var forbidden *resolve.HarnessPromptForbiddenError
			if !errors.As(err, &forbidden) || err.Error() != tc.want {
				t.Fatalf("error %v\nwant %s", err, tc.want)
			}
			// The PromptPlatform is a dependency: allowing replace renders it again.
			found := false
			for _, d := range res.Dependencies {
				found = found || d == v1alpha1.Dependency{Kind: "PromptPlatform", Name: "default"}
			}
			if !found {
				t.Errorf("dependencies %v lack the PromptPlatform", res.Dependencies)
			}
		})
	}
	replacing := persona("p", v1alpha1.PersonaSpec{HarnessPrompt: harnessPrompt("replace")})
	for name, lookup := range map[string]resolve.Lookup{
		"no PromptPlatform":            set(),
		"allowReplace unset":           set(platformAllowingReplace(nil)),
		"allowReplace true":            set(platformAllowingReplace(ptr(true))),
		"no harnessPrompt rule at all": set(&v1alpha1.PromptPlatform{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PromptPlatformName}}),
	} {
		if res := resolveOK(t, lookup, replacing); res.Bundle.Persona.HarnessPrompt != "replace" {
			t.Errorf("%s: harnessPrompt %q, want replace", name, res.Bundle.Persona.HarnessPrompt)
		}
	}
}

// While a parent is missing, the chain is not whole: the missing reference
// is what the Persona reports, not the rule a parent still to come may
// settle.
func TestMissingParentBeforeTheHarnessPromptRule(t *testing.T) {
	p := persona("p", v1alpha1.PersonaSpec{Inherit: inherit("later"), HarnessPrompt: harnessPrompt("replace")})
	_, err := resolve.Resolve(context.Background(), set(platformAllowingReplace(ptr(false))), p)
	var nf *resolve.NotFoundError
	if !errors.As(err, &nf) {
		t.Errorf("error %v, want the missing parent", err)
	}
}
