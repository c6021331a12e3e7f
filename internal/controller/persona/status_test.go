package persona

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/status"
)

func TestStatusStep(t *testing.T) {
	const notFound = `PromptLayer "absent" (referenced by persona "p") not found`
	failedBefore := func(reason, message string) v1alpha1.PersonaStatus {
		st := v1alpha1.PersonaStatus{ContentHash: "sha256:last-good", ConfigMapName: "persona-p"}
		status.MarkFailed(&st.Conditions, 1, status.Failure{Reason: reason, Message: message}, time.Now(), time.Hour)
		return st
	}
	cases := []struct {
		name    string
		before  v1alpha1.PersonaStatus
		attempt func(s *steps, p *v1alpha1.Persona) outcome
		own     bool
		// wantReady is the Ready condition as "<status> <reason>", and
		// wantInProgress whether Reconciling (rather than Stalled) is set on a failure.
		wantReady      string
		wantInProgress bool
		wantRequeue    time.Duration
		// wantEvents are the Events' "<type> <reason>".
		wantEvents      []string
		wantContentHash string // "" for the render's own
	}{{
		name: "a first render, told",
		attempt: func(s *steps, p *v1alpha1.Persona) outcome {
			o := mustRender(s, p)
			o.wrote = true
			return o
		},
		own:       true,
		wantReady: "True Rendered", wantEvents: []string{"Normal Rendered"},
	}, {
		name: "a render another object's change caused, told on that object",
		attempt: func(s *steps, p *v1alpha1.Persona) outcome {
			o := mustRender(s, p)
			o.wrote = true
			return o
		},
		wantReady: "True Rendered",
	}, {
		name: "a missing reference, awaited for the grace period",
		attempt: func(*steps, *v1alpha1.Persona) outcome {
			return failed(v1alpha1.ReferenceNotFoundReason, errors.New(notFound))
		},
		own: true, wantReady: "False ReferenceNotFound", wantInProgress: true, wantRequeue: status.DefaultReferenceGracePeriod,
		wantEvents: []string{"Warning ReferenceNotFound"}, wantContentHash: "",
	}, {
		name:   "the same failure again, told no more, the last good render's hash kept",
		before: failedBefore(v1alpha1.RenderFailedReason, "broken"),
		attempt: func(*steps, *v1alpha1.Persona) outcome {
			return failed(v1alpha1.RenderFailedReason, errors.New("broken"))
		},
		wantReady:  "False RenderFailed",
		wantEvents: nil, wantContentHash: "sha256:last-good",
	}, {
		name:   "another failure, told",
		before: failedBefore(v1alpha1.RenderFailedReason, "broken"),
		attempt: func(*steps, *v1alpha1.Persona) outcome {
			return failed(v1alpha1.RenderFailedReason, errors.New("broken otherwise"))
		},
		wantReady:  "False RenderFailed",
		wantEvents: []string{"Warning RenderFailed"}, wantContentHash: "sha256:last-good",
	}, {
		name: "a conflict, looked at again soon",
		attempt: func(*steps, *v1alpha1.Persona) outcome {
			return failed(v1alpha1.ConfigMapConflictReason, errors.New("in the way"))
		},
		wantReady:   "False ConfigMapConflict",
		wantRequeue: minConflictRecheck, wantEvents: []string{"Warning ConfigMapConflict"},
	}, {
		name: "a render out of wall time, retried by itself",
		attempt: func(*steps, *v1alpha1.Persona) outcome {
			o := failed(v1alpha1.RenderFailedReason, errors.New("out of time"))
			o.retryAfter = overrunRetry
			return o
		},
		wantReady: "False RenderFailed", wantInProgress: true, wantRequeue: overrunRetry,
		wantEvents: []string{"Warning RenderFailed"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := barePersona("p", "Hello")
			s := newSteps(t, p)
			p.Status = *tc.before.DeepCopy()
			before := tc.before.DeepCopy()
			attempt := tc.attempt(s, p)

			requeue := s.report(p, before, attempt, tc.own)
			if requeue != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", requeue, tc.wantRequeue)
			}
			ready := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition)
			if ready == nil || string(ready.Status)+" "+ready.Reason != tc.wantReady || ready.ObservedGeneration != p.Generation {
				t.Fatalf("Ready = %+v, want %s at generation %d", ready, tc.wantReady, p.Generation)
			}
			if attempt.reason == v1alpha1.RenderedReason {
				if p.Status.ContentHash != attempt.render.Hash || p.Status.ConfigMapName != "persona-p" {
					t.Errorf("status %s in %s, want %s in persona-p", p.Status.ContentHash, p.Status.ConfigMapName, attempt.render.Hash)
				}
			} else {
				if ready.Message != attempt.message {
					t.Errorf("message %q, want %q", ready.Message, attempt.message)
				}
				if p.Status.ContentHash != tc.wantContentHash {
					t.Errorf("content hash %q, want %q", p.Status.ContentHash, tc.wantContentHash)
				}
				set, unset := v1alpha1.StalledCondition, v1alpha1.ReconcilingCondition
				if tc.wantInProgress {
					set, unset = unset, set
				}
				if !meta.IsStatusConditionTrue(p.Status.Conditions, set) || meta.FindStatusCondition(p.Status.Conditions, unset) != nil {
					t.Errorf("conditions %+v, want %s and no %s", p.Status.Conditions, set, unset)
				}
			}
			var events []string
			for _, e := range s.events() {
				f := strings.Fields(e)
				events = append(events, f[0]+" "+f[1])
			}
			if strings.Join(events, ",") != strings.Join(tc.wantEvents, ",") {
				t.Errorf("events %v, want %v", events, tc.wantEvents)
			}
		})
	}
}

// mustRender is the render of p, which renders.
func mustRender(s *steps, p *v1alpha1.Persona) outcome {
	o, err := s.tryRender(context.Background(), p)
	if err != nil || o.reason != v1alpha1.RenderedReason {
		panic(fmt.Sprintf("render: %s %s %v", o.reason, o.message, err))
	}
	return o
}
