package persona

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/release"
)

// An analysis step's AnalysisRun (personas.md#prompt-releases) is made by
// the manager from the platform team's labelled ClusterAnalysisTemplates
// and run by Argo Rollouts' controller; the manager reads it back every
// analysisPoll while the step waits for it, from the API server, so that
// the step proceeds once the CRD is installed, without a restart.
const analysisPoll = 3 * time.Second

// noAnalysisRunCRD is what an analysis step waits for without the CRD.
const noAnalysisRunCRD = "the AnalysisRun CRD (argoproj.io/v1alpha1) is not installed: install Argo Rollouts' CRDs and controller"

// analysisOf is what is known of the AnalysisRun name of p's canary step.
// A run the Persona does not control is never read as its result; nor is
// one terminated before its result, which Argo Rollouts reports
// Successful: it reads as Inconclusive, which waits for a promote.
func (r *reconciler) analysisOf(ctx context.Context, p *v1alpha1.Persona, name string) release.Analysis {
	if name == "" {
		return release.Analysis{}
	}
	run := &unstructured.Unstructured{}
	run.SetGroupVersionKind(release.AnalysisRunKind)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, run)
	switch {
	case meta.IsNoMatchError(err):
		return release.Analysis{Missing: noAnalysisRunCRD}
	case apierrors.IsNotFound(err):
		return release.Analysis{}
	case err != nil:
		return release.Analysis{Missing: fmt.Sprintf("read AnalysisRun %s: %v", name, err)}
	case !metav1.IsControlledBy(run, p):
		return release.Analysis{Missing: fmt.Sprintf("AnalysisRun %s exists and is not this Persona's: the step waits until it is deleted", name)}
	}
	phase := release.RunPhase(run)
	if terminated, _, _ := unstructured.NestedBool(run.Object, "spec", "terminate"); terminated && phase.Completed() {
		return release.Analysis{Phase: release.AnalysisInconclusive, Message: "the AnalysisRun was terminated before its result"}
	}
	return release.Analysis{Phase: phase, Message: release.RunMessage(run)}
}

// startRun makes the AnalysisRun run of p's canary of revision canary
// against stable, and returns what keeps it from being made ("" once it
// exists).
func (r *reconciler) startRun(ctx context.Context, p *v1alpha1.Persona, run *release.Run, stable, canary int64) string {
	templates := make([]*unstructured.Unstructured, 0, len(run.Analysis.Templates))
	for _, ref := range run.Analysis.Templates {
		t := &unstructured.Unstructured{}
		t.SetGroupVersionKind(release.ClusterAnalysisTemplateKind)
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: ref.ClusterTemplateName}, t)
		switch {
		case meta.IsNoMatchError(err):
			return noAnalysisRunCRD
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("ClusterAnalysisTemplate %s does not exist", ref.ClusterTemplateName)
		case err != nil:
			return fmt.Sprintf("read ClusterAnalysisTemplate %s: %v", ref.ClusterTemplateName, err)
		case t.GetLabels()[v1alpha1.AnalysisTemplateLabel] != "true":
			return fmt.Sprintf("ClusterAnalysisTemplate %s is not labelled %s: \"true\", which marks the platform team's templates", ref.ClusterTemplateName, v1alpha1.AnalysisTemplateLabel)
		}
		templates = append(templates, t)
	}
	args := make(map[string]string, len(run.Analysis.Args))
	for _, a := range run.Analysis.Args {
		args[a.Name] = a.Value
	}
	set := map[string]string{
		v1alpha1.AnalysisArgPersona:        p.Name,
		v1alpha1.AnalysisArgNamespace:      p.Namespace,
		v1alpha1.AnalysisArgStableRevision: strconv.FormatInt(stable, 10),
		v1alpha1.AnalysisArgCanaryRevision: strconv.FormatInt(canary, 10),
	}
	obj, err := release.NewRun(templates, p.Namespace, run.Name, args, set)
	if err != nil {
		return err.Error()
	}
	obj.SetLabels(map[string]string{delivery.ManagedByLabel: delivery.ManagedBy, delivery.PersonaLabel: p.Name,
		delivery.RevisionLabel: strconv.FormatInt(canary, 10)})
	if err := controllerutil.SetControllerReference(p, obj, r.Scheme); err != nil {
		return err.Error()
	}
	switch err := r.Create(ctx, obj); {
	case err == nil:
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.AnalysisStartedReason, "Release",
			"AnalysisRun %s started for the canary of revision %d against stable revision %d", run.Name, canary, stable)
		return ""
	case apierrors.IsAlreadyExists(err):
		return ""
	case meta.IsNoMatchError(err):
		return noAnalysisRunCRD
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("the manager may not create AnalysisRun %s: %v (install the release analysis part of the operator)", run.Name, err)
	default:
		return fmt.Sprintf("create AnalysisRun %s: %v", run.Name, err)
	}
}

// terminateRun asks Argo Rollouts to stop the AnalysisRun name of p's
// namespace, which a newer decision no longer needs; one that is gone, or
// without the CRD, needs nothing.
func (r *reconciler) terminateRun(ctx context.Context, p *v1alpha1.Persona, name string) error {
	if name == "" {
		return nil
	}
	run := &unstructured.Unstructured{}
	run.SetGroupVersionKind(release.AnalysisRunKind)
	run.SetNamespace(p.Namespace)
	run.SetName(name)
	err := r.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"terminate":true}}`)))
	if err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	return fmt.Errorf("terminate AnalysisRun %s: %w", name, err)
}
