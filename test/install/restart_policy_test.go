package install

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/restarts"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

// The restarts' policy's name in the install.
const restartPolicy = "persona-operator-restart-workloads"

// config/default-restart-workloads' policy, on a real API server, with the
// component's RBAC, as the manager's ServiceAccount: the restart itself (a
// forced server-side apply of the two annotations with the restarts' field
// manager) passes; any other change to a workload is refused, and so is the
// restart in kube-system; and it leaves everyone else alone.
func TestRestartWorkloadsPolicy(t *testing.T) {
	p, err := controlplane.StartEmpty()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	ctx := t.Context()
	admin := p.Client
	bundle := kustomizeBuild(t, "config/default-restart-workloads")
	for _, k := range []string{
		key("ClusterRole", "", "persona-operator-restart-workloads-role"),
		key("ClusterRoleBinding", "", "persona-operator-restart-workloads-rolebinding"),
		key("ValidatingAdmissionPolicy", "", restartPolicy),
		key("ValidatingAdmissionPolicyBinding", "", restartPolicy),
	} {
		u, ok := bundle[k]
		if !ok {
			t.Fatalf("config/default-restart-workloads has no %s", k)
		}
		if err := admin.Create(ctx, u.DeepCopy()); err != nil {
			t.Fatalf("create %s: %v", k, err)
		}
	}
	const ns = "agents"
	createNamespace(ctx, t, admin, ns)
	for _, w := range []client.Object{workload(ns, "agent"), workload("kube-system", "agent"), statefulWorkload(ns, "agent")} {
		if err := admin.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	mgr := serviceAccount(namespace, deploymentName).client(t, p)

	// The API server loads a new policy within a moment; until then a change
	// goes through, so each attempt is a new one. The object is then put back.
	attempt := 0
	waitFor(ctx, t, 10*time.Second, "the policy refuses the manager an image change", func() (bool, string) {
		attempt++
		err := change(ctx, mgr, ns, "agent", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("evil:%d", attempt)
		})
		return refusedByRestartPolicy(err), errString(err)
	})
	if err := change(ctx, admin, ns, "agent", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "agent:1" }); err != nil {
		t.Fatal(err)
	}

	t.Run("the restart passes", func(t *testing.T) {
		if err := restartApply(ctx, mgr, ns, "agent", "7"); err != nil {
			t.Fatalf("the restart refused: %v", err)
		}
		var d appsv1.Deployment
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "agent"}, &d); err != nil {
			t.Fatal(err)
		}
		if d.Annotations[v1alpha1.AppliedRevisionAnnotation] != "7" || d.Spec.Template.Annotations[delivery.RevisionAnnotation] != "7" {
			t.Errorf("annotations %v, template annotations %v: want both at 7", d.Annotations, d.Spec.Template.Annotations)
		}
		if d.Spec.Template.Spec.Containers[0].Image != "agent:1" {
			t.Errorf("image %s", d.Spec.Template.Spec.Containers[0].Image)
		}
		// A StatefulSet takes the same restart.
		ac := appsv1ac.StatefulSet("agent", ns).WithAnnotations(map[string]string{v1alpha1.AppliedRevisionAnnotation: "7"}).
			WithSpec(appsv1ac.StatefulSetSpec().WithTemplate(corev1ac.PodTemplateSpec().WithAnnotations(map[string]string{delivery.RevisionAnnotation: "7"})))
		if err := mgr.Apply(ctx, ac, client.FieldOwner(restarts.FieldManager), client.ForceOwnership); err != nil {
			t.Errorf("the StatefulSet's restart refused: %v", err)
		}
	})

	t.Run("any other change is refused", func(t *testing.T) {
		for _, c := range []struct {
			what   string
			change func(*appsv1.Deployment)
		}{
			{"the image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "evil:1" }},
			{"a container's command", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Command = []string{"/bin/sh"} }},
			{"the replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](9) }},
			{"pausing it", func(d *appsv1.Deployment) { d.Spec.Paused = true }},
			{"a pod template label", func(d *appsv1.Deployment) { d.Spec.Template.Labels["extra"] = "x" }},
			{"another pod template annotation", func(d *appsv1.Deployment) {
				d.Spec.Template.Annotations = map[string]string{delivery.RevisionAnnotation: "8", "kubectl.kubernetes.io/restartedAt": "now"}
			}},
			{"a workload label", func(d *appsv1.Deployment) { d.Labels["extra"] = "x" }},
			{"another workload annotation", func(d *appsv1.Deployment) { d.Annotations["extra"] = "x" }},
			{"the finalizers", func(d *appsv1.Deployment) { d.Finalizers = []string{"example.com/hold"} }},
		} {
			if err := change(ctx, mgr, ns, "agent", c.change); !refusedByRestartPolicy(err) {
				t.Errorf("%s: want the policy's refusal, got %s", c.what, errString(err))
			}
		}
		var s appsv1.StatefulSet
		if err := mgr.Get(ctx, client.ObjectKey{Namespace: ns, Name: "agent"}, &s); err != nil {
			t.Fatal(err)
		}
		before := s.DeepCopy()
		s.Spec.Template.Spec.Containers[0].Image = "evil:1"
		if err := mgr.Patch(ctx, &s, client.MergeFrom(before)); !refusedByRestartPolicy(err) {
			t.Errorf("a StatefulSet's image: want the policy's refusal, got %s", errString(err))
		}
	})

	t.Run("nothing in kube-system", func(t *testing.T) {
		if err := restartApply(ctx, mgr, "kube-system", "agent", "7"); !refusedByRestartPolicy(err) {
			t.Errorf("the restart in kube-system: want the policy's refusal, got %s", errString(err))
		}
	})

	t.Run("only workloads that opt in", func(t *testing.T) {
		other := workload(ns, "not-opted-in")
		other.Labels = nil
		if err := admin.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		if err := restartApply(ctx, mgr, ns, "not-opted-in", "7"); !refusedByRestartPolicy(err) {
			t.Errorf("the restart of a workload that does not opt in: want the policy's refusal, got %s", errString(err))
		}
	})

	t.Run("only a revision as the value", func(t *testing.T) {
		for _, v := range []string{"x", "0", "-1", "01"} {
			if err := restartApply(ctx, mgr, ns, "agent", v); !refusedByRestartPolicy(err) {
				t.Errorf("the annotations set to %q: want the policy's refusal, got %s", v, errString(err))
			}
		}
	})

	t.Run("neither create nor delete", func(t *testing.T) {
		if err := mgr.Create(ctx, workload(ns, "new")); !apierrors.IsForbidden(err) {
			t.Errorf("create: want Forbidden, got %s", errString(err))
		}
		if err := mgr.Delete(ctx, workload(ns, "agent")); !apierrors.IsForbidden(err) {
			t.Errorf("delete: want Forbidden, got %s", errString(err))
		}
	})

	t.Run("anyone else is left alone", func(t *testing.T) {
		if err := change(ctx, admin, ns, "agent", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "agent:2" }); err != nil {
			t.Errorf("the administrator's image change: %v", err)
		}
	})
}

// restartApply is the restart's write (the restarts' apply): the two
// annotations, with the restarts' field manager, forced.
func restartApply(ctx context.Context, c client.Client, ns, name, revision string) error {
	ac := appsv1ac.Deployment(name, ns).WithAnnotations(map[string]string{v1alpha1.AppliedRevisionAnnotation: revision}).
		WithSpec(appsv1ac.DeploymentSpec().WithTemplate(corev1ac.PodTemplateSpec().WithAnnotations(map[string]string{delivery.RevisionAnnotation: revision})))
	return c.Apply(ctx, ac, client.FieldOwner(restarts.FieldManager), client.ForceOwnership)
}

// change reads the Deployment and patches it as c, with edit's change
// (the manager may patch, not update).
func change(ctx context.Context, c client.Client, ns, name string, edit func(*appsv1.Deployment)) error {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		return err
	}
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	before := d.DeepCopy()
	edit(&d)
	return c.Patch(ctx, &d, client.MergeFrom(before))
}

func refusedByRestartPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+restartPolicy+"'")
}

func workloadTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, delivery.PersonaLabel: name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}},
	}
}

// workload is a Deployment that opts in to restarts.
func workload(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.RestartOnChangeLabel: "true"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: workloadTemplate(name),
		},
	}
}

func statefulWorkload(ns, name string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.RestartOnChangeLabel: "true"}},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: workloadTemplate(name),
		},
	}
}
