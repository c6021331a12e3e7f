package rollouts_test

import (
	"context"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/release"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/rollouts"
)

// analysedPersona is a Persona whose canaries take 20% of new pods, then
// go through the analysis of prompt-quality against the score the stub
// answers at url.
func analysedPersona(ns, prompt, url string) *v1alpha1.Persona {
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reviewer"}}
	p.Spec.Prompt = prompt
	weight := int32(20)
	p.Spec.Rollout = &v1alpha1.Rollout{Steps: []v1alpha1.RolloutStep{
		{SetWeight: &weight},
		{Analysis: &v1alpha1.RolloutAnalysis{Templates: []v1alpha1.AnalysisTemplateRef{{ClusterTemplateName: "prompt-quality"}},
			Args: []v1alpha1.AnalysisArg{{Name: "url", Value: url}}}},
	}}
	return p
}

// TestAnalysisStepsPromoteAndAbort runs the manager, with the RBAC and the
// policy of config/components/release-analysis, beside Argo Rollouts' own
// controller: a canary whose analysis passes (a web metric answered by a
// stub on 127.0.0.1) is promoted; one whose analysis fails is aborted,
// naming the AnalysisRun's message; a canary replaced while its analysis
// runs has its run stopped. Each run is the Persona's, named by its canary
// revision and step, with the template's args. The manager's requests on
// Argo Rollouts' kinds, in the API server's audit log, use exactly the
// rights of the component's role.
func TestAnalysisStepsPromoteAndAbort(t *testing.T) {
	controlplane.RequireEnvtest(t)
	dir := rollouts.Require(t)
	root := repoRoot(t)
	ctx := t.Context()
	audit, auditLog, err := controlplane.WithAuditLog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plane, err := controlplane.Start(root, audit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plane.Stop() })
	manager := runManager(t, plane, root)
	if _, err := rollouts.Start(t, plane, dir); err != nil {
		t.Fatal(err)
	}
	installAnalysisComponent(t, ctx, plane, root)

	stub := &scoreStub{hits: map[string]int{}}
	server := httptest.NewServer(stub) // on 127.0.0.1
	t.Cleanup(server.Close)
	objects, err := controlplane.DecodeManifest(strings.NewReader(qualityTemplate))
	if err != nil || len(objects) != 1 {
		t.Fatalf("decode the template: %d objects, %v", len(objects), err)
	}
	template := objects[0]
	template.SetLabels(map[string]string{v1alpha1.AnalysisTemplateLabel: "true"})
	if err := plane.Client.Create(ctx, template); err != nil {
		t.Fatal(err)
	}
	const ns = "team"
	if err := plane.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	c := plane.Client
	if err := c.Create(ctx, analysedPersona(ns, "One", server.URL+"/0.93")); err != nil {
		t.Fatal(err)
	}
	waitPersona(t, c, ns, "revision 1 current", func(p *v1alpha1.Persona) bool { return p.Status.CurrentRevision == 1 })

	edit := func(prompt, url string) {
		t.Helper()
		p := &v1alpha1.Persona{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "reviewer"}, p); err != nil {
			t.Fatal(err)
		}
		p.Spec = analysedPersona(ns, prompt, url).Spec
		if err := c.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	// Revision 2 passes its analysis: promoted.
	edit("Two", server.URL+"/0.93")
	completed := waitRun(t, c, ns, release.RunName("reviewer", 2, 1))
	promoted := waitPersona(t, c, ns, "revision 2 promoted", func(p *v1alpha1.Persona) bool { return p.Status.CurrentRevision == 2 && p.Status.Canary == nil })
	t.Logf("revision 2: AnalysisRun %s completed Successful; the Persona promoted it %v later", release.RunName("reviewer", 2, 1), time.Since(completed).Round(time.Millisecond))
	if e, ok := promoted.Status.LatestEntry(); !ok || e.Revision != 2 || e.Release == nil || e.Release.Outcome != "Promoted" {
		t.Errorf("history of revision 2: %+v, want released Promoted", e)
	}
	run := &unstructured.Unstructured{}
	run.SetGroupVersionKind(release.AnalysisRunKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: release.RunName("reviewer", 2, 1)}, run); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(run, promoted) {
		t.Errorf("the AnalysisRun's owners %v do not name the Persona as controller", run.GetOwnerReferences())
	}

	// Revision 3 fails it: aborted, with the run's message; the stable
	// revision stays 2.
	edit("Three", server.URL+"/0.42")
	completed = waitRun(t, c, ns, release.RunName("reviewer", 3, 1))
	aborted := waitPersona(t, c, ns, "revision 3 aborted", func(p *v1alpha1.Persona) bool {
		return p.Status.Canary != nil && p.Status.Canary.Phase == v1alpha1.CanaryAborted
	})
	t.Logf("revision 3: AnalysisRun %s completed Failed; the Persona aborted its canary %v later", release.RunName("reviewer", 3, 1), time.Since(completed).Round(time.Millisecond))
	const runMessage = `Metric "score" assessed Failed due to failed (1) > failureLimit (0)`
	if aborted.Status.CurrentRevision != 2 || !strings.Contains(aborted.Status.Canary.Message, runMessage) {
		t.Errorf("after the failed analysis: current revision %d, canary %+v; want 2, and the message naming %q",
			aborted.Status.CurrentRevision, aborted.Status.Canary, runMessage)
	}

	// Revision 4's analysis is still waiting for its answer when revision 5
	// replaces it: its run is stopped, and revision 5's passes.
	edit("Four", server.URL+"/slow/0.93")
	superseded := release.RunName("reviewer", 4, 1)
	waitPersona(t, c, ns, "revision 4's AnalysisRun made", func(p *v1alpha1.Persona) bool {
		return p.Status.Canary != nil && p.Status.Canary.AnalysisRun == superseded
	})
	edit("Five", server.URL+"/0.93")
	waitRun(t, c, ns, release.RunName("reviewer", 5, 1))
	waitPersona(t, c, ns, "revision 5 promoted", func(p *v1alpha1.Persona) bool { return p.Status.CurrentRevision == 5 && p.Status.Canary == nil })
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: superseded}, run); err != nil {
		t.Fatal(err)
	}
	if stopped, _, _ := unstructured.NestedBool(run.Object, "spec", "terminate"); !stopped {
		t.Errorf("the AnalysisRun %s of the replaced canary was not stopped (spec.terminate unset)", superseded)
	}

	if err := manager.Stop(); err != nil {
		t.Fatal(err)
	}
	granted := componentRights(t, root)
	audited, err := controlplane.AuditedRequests(auditLog, controlplane.ManagerUser, granted)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range audited.Refused {
		t.Errorf("the manager was refused: %s", r)
	}
	used := map[string]bool{}
	for right := range audited.Used {
		if strings.HasPrefix(right, `"argoproj.io" `) {
			used[right] = true
		}
	}
	if !maps.Equal(used, granted) {
		t.Errorf("the manager's requests on Argo Rollouts' kinds used\n  %s\nthe component's role grants\n  %s",
			strings.Join(slices.Sorted(maps.Keys(used)), "\n  "), strings.Join(slices.Sorted(maps.Keys(granted)), "\n  "))
	}
}

// componentRights are the rights the role of
// config/components/release-analysis grants, in RuleRights' form.
func componentRights(t *testing.T, root string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "config", "components", "release-analysis", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		Rules []any `json:"rules"`
	}
	if err := yaml.Unmarshal(raw, &role); err != nil {
		t.Fatal(err)
	}
	return controlplane.RuleRights(role.Rules)
}

// repoRoot is the repository's root.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runManager builds the manager of the repository at root and runs it
// against plane with the flags extra, until the test's cleanup stops it
// (printing the tail of its log when the test failed).
func runManager(t *testing.T, plane *controlplane.Plane, root string, extra ...string) *controlplane.Manager {
	t.Helper()
	binary, err := controlplane.BuildManager(t.Context(), root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var logs controlplane.LogBuffer
	manager, err := plane.NewManager(binary, &logs, extra...)
	if err != nil {
		t.Fatal(err)
	}
	if err := manager.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = manager.Stop()
		if t.Failed() {
			t.Logf("manager log:\n%s", logs.Tail(16<<10))
		}
	})
	return manager
}

// installAnalysisComponent installs config/components/release-analysis
// for the manager's test identity.
func installAnalysisComponent(t *testing.T, ctx context.Context, plane *controlplane.Plane, root string) {
	t.Helper()
	if err := plane.InstallComponent(ctx, filepath.Join(root, "config", "components", "release-analysis"), controlplane.ManagerUser); err != nil {
		t.Fatal(err)
	}
}

// waitPersona polls the Persona reviewer of ns until done holds, for at
// most a minute, and returns it.
func waitPersona(t *testing.T, c client.Client, ns, what string, done func(*v1alpha1.Persona) bool) *v1alpha1.Persona {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p := &v1alpha1.Persona{}
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "reviewer"}, p)
		if err == nil && done(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute (%v): status %s", what, err, describe(p))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRun waits until the AnalysisRun name of ns completes, and returns
// when it saw that.
func waitRun(t *testing.T, c client.Client, ns, name string) time.Time {
	t.Helper()
	if _, err := rollouts.WaitCompleted(t.Context(), c, ns, name, time.Minute); err != nil {
		p := &v1alpha1.Persona{}
		_ = c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "reviewer"}, p)
		t.Fatalf("%v; the Persona's status: %s", err, describe(p))
	}
	return time.Now()
}

func describe(p *v1alpha1.Persona) string {
	raw, _ := yaml.Marshal(map[string]any{"currentRevision": p.Status.CurrentRevision, "latestRevision": p.Status.LatestRevision,
		"canary": p.Status.Canary, "conditions": p.Status.Conditions})
	return fmt.Sprintf("\n%s", raw)
}
