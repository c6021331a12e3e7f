package rollouts_test

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	personaadmission "github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/release"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/rollouts"
)

// TestSampleAnalysisTemplatesMakeRuns: the ClusterAnalysisTemplates of
// config/samples/releases are labelled for analysis steps and valid to Argo
// Rollouts' CRDs, the sample Persona is valid, and each of its analysis
// steps makes an AnalysisRun the API server accepts, every declared arg
// given a value by the Persona, the template or the operator.
func TestSampleAnalysisTemplatesMakeRuns(t *testing.T) {
	controlplane.RequireEnvtest(t)
	dir := rollouts.Require(t)
	plane, err := controlplane.StartEmpty()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plane.Stop() })
	if err := rollouts.InstallCRDs(plane.Config, dir); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	samples := filepath.Join("..", "..", "config", "samples", "releases")
	templates := map[string]*unstructured.Unstructured{}
	var persona map[string]any
	files, _ := filepath.Glob(filepath.Join(samples, "*.yaml"))
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch u.GetKind() {
		case "ClusterAnalysisTemplate":
			if u.GetLabels()[v1alpha1.AnalysisTemplateLabel] != "true" {
				t.Errorf("%s is not labelled %s: \"true\"", u.GetName(), v1alpha1.AnalysisTemplateLabel)
			}
			if err := plane.Client.Create(ctx, u); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			templates[u.GetName()] = u
		case v1alpha1.PersonaKind:
			persona = u.Object
		}
	}
	if len(templates) != 3 || persona == nil {
		t.Fatalf("%d templates and a Persona (%v) in %s, want 3 and one", len(templates), persona != nil, samples)
	}
	if errs := personaadmission.Validate(persona); len(errs) > 0 {
		t.Fatalf("the sample Persona is refused: %v", errs)
	}
	raw, _ := yaml.Marshal(persona)
	var p v1alpha1.Persona
	if err := yaml.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	p.Namespace = "team"
	set := map[string]string{"persona": p.Name, "namespace": p.Namespace, "stable-revision": "3", "canary-revision": "4"}
	for step, s := range p.Spec.Rollout.Steps {
		if s.Analysis == nil {
			continue
		}
		var chosen []*unstructured.Unstructured
		for _, ref := range s.Analysis.Templates {
			chosen = append(chosen, templates[ref.ClusterTemplateName])
		}
		args := map[string]string{}
		for _, a := range s.Analysis.Args {
			args[a.Name] = a.Value
		}
		run, err := release.NewRun(chosen, "default", release.RunName(p.Name, 4, int32(step)), args, set)
		if err != nil {
			t.Errorf("step %d: %v", step, err)
			continue
		}
		if err := plane.Client.Create(ctx, run, client.DryRunAll); err != nil {
			t.Errorf("step %d: the API server refuses its AnalysisRun: %v", step, err)
		}
	}
	// The Job evaluation, which no sample step uses, with its own args.
	run, err := release.NewRun([]*unstructured.Unstructured{templates["prompt-eval-job"]}, "default", "job", nil, set)
	if err == nil {
		err = plane.Client.Create(ctx, run, client.DryRunAll)
	}
	if err != nil {
		t.Errorf("the Job evaluation's AnalysisRun: %v", err)
	}
}
