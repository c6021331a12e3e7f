package restarts

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
	}
	return rolloutComplete
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

// podTemplate is obj's pod template.
func podTemplate(obj client.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	}
	return nil
}

// workloadPersona is the Persona a workload names: on its metadata, else
// on its pod template.
func workloadPersona(obj client.Object) string {
	if name := obj.GetLabels()[delivery.PersonaLabel]; name != "" {
		return name
	}
	if t := podTemplate(obj); t != nil {
		return t.Labels[delivery.PersonaLabel]
	}
	return ""
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
