package status

import (
	"errors"
	"fmt"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

func TestResolveReason(t *testing.T) {
	missing := &resolve.NotFoundError{Missing: []resolve.Reference{{Kind: v1alpha1.PromptLayerKind, Name: "a"}}}
	for _, tc := range []struct {
		name   string
		err    error
		reason string
		ok     bool
	}{
		{"a missing reference", missing, v1alpha1.ReferenceNotFoundReason, true},
		{"a wrapped missing reference", fmt.Errorf("resolve: %w", missing), v1alpha1.ReferenceNotFoundReason, true},
		{"a cycle", &resolve.CycleError{Chain: []string{"a", "b", "a"}}, v1alpha1.InheritanceCycleReason, true},
		{"a chain too deep", &resolve.TooDeepError{Persona: "p65"}, v1alpha1.InheritanceTooDeepReason, true},
		{"a failure to read", fmt.Errorf("get PromptLayer ns/a: %w", errors.New("connection refused")), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if reason, ok := ResolveReason(tc.err); reason != tc.reason || ok != tc.ok {
				t.Fatalf("ResolveReason = %q, %v; want %q, %v", reason, ok, tc.reason, tc.ok)
			}
		})
	}
}

func TestRenderReason(t *testing.T) {
	outOfTime := &render.LimitError{Limit: render.LimitTime}
	for _, tc := range []struct {
		name      string
		err       error
		reason    string
		outOfTime bool
	}{
		{"data over the limit", &render.TooLargeError{Bytes: 2 << 20, Limit: 900 << 10}, v1alpha1.TooLargeReason, false},
		{"a section that fails", &render.RenderError{Section: "layer.a", Err: errors.New("fail")}, v1alpha1.RenderFailedReason, false},
		{"out of wall time", &render.RenderError{Section: "layer.a", Err: outOfTime}, v1alpha1.RenderFailedReason, true},
		{"out of the persona's shared time", &render.LimitError{Limit: render.LimitPersonaTime}, v1alpha1.RenderFailedReason, true},
		{"another limit", &render.LimitError{Limit: "units"}, v1alpha1.RenderFailedReason, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if reason := RenderReason(tc.err); reason != tc.reason {
				t.Fatalf("RenderReason = %q, want %q", reason, tc.reason)
			}
			if got := OutOfTime(tc.err); got != tc.outOfTime {
				t.Fatalf("OutOfTime = %v, want %v", got, tc.outOfTime)
			}
		})
	}
}
