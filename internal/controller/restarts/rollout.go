package restarts

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// rollout is how far a workload's rollout is, read as kubectl rollout
// status reads it.
type rollout int

const (
	rolloutProgressing rollout = iota
	rolloutComplete
	// rolloutHeld: the workload cannot roll out by itself (OnDelete, a
	// StatefulSet partition above 0, a paused Deployment), so it counts
	// as done at once; its pods change when someone acts.
	rolloutHeld
	// rolloutFailed: ProgressDeadlineExceeded.
	rolloutFailed
)

func (r rollout) done() bool { return r == rolloutComplete || r == rolloutHeld }

// rolloutOf reads obj's status: a status older than its spec is progressing.
func rolloutOf(obj client.Object) rollout {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return deploymentRollout(o)
	case *appsv1.StatefulSet:
		return statefulSetRollout(o)
	case *appsv1.DaemonSet:
		return daemonSetRollout(o)
	case *unstructured.Unstructured:
		return argoRollout(o)
	}
	return rolloutComplete
}

// failureOf says why obj's rollout failed.
func failureOf(obj client.Object) string {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		message, _, _ := unstructured.NestedString(u.Object, "status", "message")
		return "Degraded: " + message
	}
	return "ProgressDeadlineExceeded"
}

func deploymentRollout(d *appsv1.Deployment) rollout {
	if d.Spec.Paused {
		return rolloutHeld
	}
	if d.Status.ObservedGeneration < d.Generation {
		return rolloutProgressing
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return rolloutFailed
		}
	}
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	switch {
	case d.Status.UpdatedReplicas < replicas, // new replicas still to come
		d.Status.Replicas > d.Status.UpdatedReplicas, // old replicas still to go
		d.Status.AvailableReplicas < d.Status.UpdatedReplicas:
		return rolloutProgressing
	}
	return rolloutComplete
}

func statefulSetRollout(s *appsv1.StatefulSet) rollout {
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return rolloutHeld
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ptr.Deref(ru.Partition, 0) > 0 {
		return rolloutHeld
	}
	if s.Status.ObservedGeneration < s.Generation {
		return rolloutProgressing
	}
	replicas := ptr.Deref(s.Spec.Replicas, 1)
	if s.Status.ReadyReplicas < replicas || s.Status.UpdatedReplicas < replicas || s.Status.UpdateRevision != s.Status.CurrentRevision {
		return rolloutProgressing
	}
	return rolloutComplete
}

func daemonSetRollout(d *appsv1.DaemonSet) rollout {
	if d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return rolloutHeld
	}
	if d.Status.ObservedGeneration < d.Generation {
		return rolloutProgressing
	}
	if d.Status.UpdatedNumberScheduled < d.Status.DesiredNumberScheduled || d.Status.NumberAvailable < d.Status.DesiredNumberScheduled {
		return rolloutProgressing
	}
	return rolloutComplete
}

// argoRollout reads an Argo Rollouts Rollout's status as its own `kubectl
// argo rollouts status` does, by its phase, once the status is of its
// generation. Paused (its strategy waits for a promotion, or spec.paused)
// is held: what comes next is its strategy's, or someone's, to decide.
func argoRollout(u *unstructured.Unstructured) rollout {
	if paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused"); paused {
		return rolloutHeld
	}
	// Argo Rollouts writes the generation it observed as a string.
	observed, _, _ := unstructured.NestedString(u.Object, "status", "observedGeneration")
	if observed != strconv.FormatInt(u.GetGeneration(), 10) {
		return rolloutProgressing
	}
	switch phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase {
	case "Healthy":
		return rolloutComplete
	case "Paused":
		return rolloutHeld
	case "Degraded":
		return rolloutFailed
	}
	return rolloutProgressing
}

// templateLabels are the labels of obj's pod template.
func templateLabels(obj client.Object) map[string]string {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Spec.Template.Labels
	case *appsv1.StatefulSet:
		return o.Spec.Template.Labels
	case *appsv1.DaemonSet:
		return o.Spec.Template.Labels
	case *unstructured.Unstructured:
		labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		return labels
	}
	return nil
}

// templateElsewhere says why a restart cannot change obj's pod template,
// "" when it can: a Rollout that takes its template from another workload
// (spec.workloadRef).
func templateElsewhere(obj client.Object) string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return ""
	}
	ref, found, _ := unstructured.NestedMap(u.Object, "spec", "workloadRef")
	if !found {
		return ""
	}
	return fmt.Sprintf("the Rollout takes its pod template from %v %v (spec.workloadRef): label that workload %s instead, and the Rollout rolls out its restarts",
		ref["kind"], ref["name"], v1alpha1.RestartOnChangeLabel)
}

// workloadPersona is the Persona a workload names: on its metadata, else
// on its pod template.
func workloadPersona(obj client.Object) string {
	if name := obj.GetLabels()[delivery.PersonaLabel]; name != "" {
		return name
	}
	return templateLabels(obj)[delivery.PersonaLabel]
}

// appliedRevision is the revision the operator last restarted obj onto, 0
// when none (or an annotation that does not parse).
func appliedRevision(obj client.Object) int64 {
	n, err := strconv.ParseInt(obj.GetAnnotations()[v1alpha1.AppliedRevisionAnnotation], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
