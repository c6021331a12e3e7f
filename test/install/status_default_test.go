package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/test/argocd"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

// A new object of every kind reads as in progress, to kstatus and to the
// Argo CD health script, from the moment it is created until the controller
// writes its first status: the CRDs default status to
// {observedGeneration: -1}, which no generation equals. Without it an object
// with no status reads as Current, and a GitOps wait passes before anything
// was rendered. No manager runs here, so nothing else writes a status.
func TestNewObjectsReadAsInProgress(t *testing.T) {
	controlplane.RequireEnvtest(t)
	p, err := controlplane.StartEmpty()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	ctx := t.Context()
	crds := readManifest(t, "dist/install.yaml").ofKind("CustomResourceDefinition")
	for _, k := range crds.keys() {
		if err := p.Client.Create(ctx, crds[k].DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range crds.keys() {
		waitEstablished(ctx, t, p.Client, crds[k].GetName())
	}
	script, err := argocd.Script(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "tenant"},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []map[string]any{
		{"kind": "Persona", "metadata": map[string]any{"name": "p", "namespace": "tenant"}},
		{"kind": "PromptLayer", "metadata": map[string]any{"name": "l", "namespace": "tenant"},
			"spec": map[string]any{"source": "app", "mode": "append", "template": "Layer."}},
		{"kind": "ClusterPromptLayer", "metadata": map[string]any{"name": "c"},
			"spec": map[string]any{"template": "Guardrail."}},
		{"kind": "PromptPlatform", "metadata": map[string]any{"name": "default"}},
	} {
		obj["apiVersion"] = "prompts.persona-operator.dev/v1alpha1"
		u := &unstructured.Unstructured{Object: obj}
		kind, key := u.GetKind(), client.ObjectKeyFromObject(u)
		// A status given at create is dropped by the API server; the default stays.
		u.Object["status"] = map[string]any{"observedGeneration": int64(1)}
		if err := p.Client.Create(ctx, u); err != nil {
			t.Fatalf("create %s: %v", kind, err)
		}
		for _, read := range []string{"the create's answer", "a get"} {
			if read == "a get" {
				u = &unstructured.Unstructured{}
				u.SetAPIVersion("prompts.persona-operator.dev/v1alpha1")
				u.SetKind(kind)
				if err := p.Client.Get(ctx, key, u); err != nil {
					t.Fatal(err)
				}
			}
			got, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			if !found || got != -1 {
				t.Errorf("%s, %s: status.observedGeneration is %d (found %v), want -1", kind, read, got, found)
			}
			res, err := status.Compute(u)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != status.InProgressStatus {
				t.Errorf("%s, %s: kstatus reads %s (%s), want InProgress", kind, read, res.Status, res.Message)
			}
			argo, msg, err := argocd.Health(script, u.Object)
			if err != nil {
				t.Fatal(err)
			}
			if argo != "Progressing" {
				t.Errorf("%s, %s: Argo CD reads %s (%s), want Progressing", kind, read, argo, msg)
			}
		}
	}
}
