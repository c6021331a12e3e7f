package rollouts_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/release"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/rollouts"
)

// TestAnalysisPolicyRefusesWhatTheManagerMustNotMake: with the RBAC and
// the policy of config/components/release-analysis, the manager's identity
// may make an AnalysisRun with a Persona as its controller, in a tenant's
// namespace, of web metrics, and stop it; it may not make one without a
// Persona controlling it, in kube-system or the operator's namespace, or
// with a Job metric while the platform's parameter does not allow it, nor
// change a run otherwise than to stop it.
func TestAnalysisPolicyRefusesWhatTheManagerMustNotMake(t *testing.T) {
	controlplane.RequireEnvtest(t)
	dir := rollouts.Require(t)
	root := repoRoot(t)
	plane, err := controlplane.Start(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plane.Stop() })
	if err := rollouts.InstallCRDs(plane.Config, dir); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	installAnalysisComponent(t, ctx, plane, root)
	manager, err := client.New(plane.Impersonating(controlplane.ManagerUser), client.Options{Scheme: controlplane.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team"} {
		if err := plane.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	owner := metav1.OwnerReference{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "reviewer",
		UID: "5b0f2ad2-4a5e-4c55-9d5e-0d4e1c1b2a3f", Controller: new(true)}
	web := map[string]any{"name": "score", "provider": map[string]any{"web": map[string]any{"url": "http://127.0.0.1/score"}}}
	job := map[string]any{"name": "eval", "provider": map[string]any{"job": map[string]any{"spec": map[string]any{"template": map[string]any{
		"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "eval", "image": "eval"}}}}}}}}
	run := func(ns, name string, owners []metav1.OwnerReference, metrics ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"metrics": metrics}}}
		u.SetGroupVersionKind(release.AnalysisRunKind)
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetOwnerReferences(owners)
		return u
	}
	// The API server applies a new policy within a second or so.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := manager.Create(ctx, run("kube-system", "probe", []metav1.OwnerReference{owner}, web))
		if err != nil && strings.Contains(err.Error(), "may not make AnalysisRuns in kube-system") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy does not refuse a run in kube-system: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct {
		what string
		run  *unstructured.Unstructured
		want string // "" is allowed
	}{
		{"a run of a Persona's in a tenant's namespace", run("team", "reviewer-r2-s1", []metav1.OwnerReference{owner}, web), ""},
		{"a run without an owner", run("team", "orphan", nil, web), "only with a Persona as its controller"},
		{"a run owned by another kind", run("team", "other", []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d",
			UID: "5b0f2ad2-4a5e-4c55-9d5e-0d4e1c1b2a40", Controller: new(true)}}, web), "only with a Persona as its controller"},
		{"a run in kube-system", run("kube-system", "r", []metav1.OwnerReference{owner}, web), "may not make AnalysisRuns in kube-system"},
		{"a run in the operator's namespace", run("persona-operator-system", "r", []metav1.OwnerReference{owner}, web), "may not make AnalysisRuns in persona-operator-system"},
		{"a run of a Job metric", run("team", "evaluation", []metav1.OwnerReference{owner}, job), "with a Job metric"},
	} {
		err := manager.Create(ctx, c.run)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.what, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a refusal saying %q", c.what, err, c.want)
		}
	}
	allowed := run("team", "reviewer-r2-s1", nil)
	stop := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"terminate":true}}`))
	if err := manager.Patch(ctx, allowed, stop); err != nil {
		t.Errorf("stopping a run: %v", err)
	}
	change := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"metrics":[{"name":"other","provider":{"web":{"url":"http://127.0.0.1/other"}}}]}}`))
	if err := manager.Patch(ctx, allowed, change); err == nil || !strings.Contains(err.Error(), "only stop an AnalysisRun") {
		t.Errorf("changing a run's metrics: %v, want a refusal", err)
	}
}
