package inject

import (
	"strconv"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// withCanary is reviewer, stable at revision 3, with a canary at revision 4
// rendered with the same guardrails; toCanary is the webhook's choice.
func withCanary(toCanary bool) *Persona {
	p := reviewer()
	p.Snapshots[4] = "g2"
	p.Canary, p.ToCanary = 4, toCanary
	return p
}

func TestCanaryChoice(t *testing.T) {
	for _, c := range []struct {
		name        string
		persona     *Persona
		annotations map[string]string
		revision    int64
		track       string
	}{
		{"chosen for the canary", withCanary(true), nil, 4, v1alpha1.TrackCanary},
		{"not chosen", withCanary(false), nil, 3, v1alpha1.TrackStable},
		{"a template that names the stable revision, chosen", withCanary(true), map[string]string{RevisionAnnotation: "3"}, 3, v1alpha1.TrackStable},
		{"a template that names the canary revision", withCanary(false), map[string]string{RevisionAnnotation: "4"}, 4, v1alpha1.TrackCanary},
		{"no canary", reviewer(), nil, 3, v1alpha1.TrackStable},
	} {
		t.Run(c.name, func(t *testing.T) {
			pod := agentPod(c.annotations)
			res, errs := Pod(pod, c.persona, Config{})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if res.Revision != c.revision || pod.Labels[TrackLabel] != c.track || pod.Labels[RevisionLabel] != strconv.FormatInt(c.revision, 10) {
				t.Errorf("revision %d, labels %v; want revision %d, track %s", res.Revision, pod.Labels, c.revision, c.track)
			}
		})
	}
}

// The canary's snapshot rendered with other guardrails than the stable
// revision's (a guardrail change reached the stable revision first) is no
// pod's: a pod chosen for it gets the stable revision.
func TestCanaryWithOtherGuardrailsIsNotMounted(t *testing.T) {
	p := withCanary(true)
	p.Snapshots[4] = "g1"
	pod := agentPod(nil)
	if res, errs := Pod(pod, p, Config{}); len(errs) > 0 || res.Revision != 3 || pod.Labels[TrackLabel] != v1alpha1.TrackStable {
		t.Errorf("revision %d, labels %v, %v; want the stable revision 3", res.Revision, pod.Labels, errs)
	}
}

// On reinvocation the choice on the pod stands, whatever this review's
// choice is; a track label the pod set itself is overwritten.
func TestCanaryChoiceKeptOnReinvocation(t *testing.T) {
	pod := agentPod(nil)
	pod.Labels[TrackLabel] = v1alpha1.TrackStable
	if _, errs := Pod(pod, withCanary(true), Config{}); len(errs) > 0 || pod.Labels[TrackLabel] != v1alpha1.TrackCanary {
		t.Fatalf("labels %v, %v", pod.Labels, errs)
	}
	res, errs := Pod(pod, withCanary(false), Config{})
	if len(errs) > 0 || res.Revision != 4 || pod.Labels[TrackLabel] != v1alpha1.TrackCanary {
		t.Errorf("reinvoked: revision %d, labels %v, %v; want the canary 4 kept", res.Revision, pod.Labels, errs)
	}
}
