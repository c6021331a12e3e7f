package rollouts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kinds are handled as unstructured objects, so that go.mod does not pin
// Argo Rollouts: the controller's version is hack/argo-rollouts.sh's alone.
var (
	AnalysisRunKind             = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "AnalysisRun"}
	ClusterAnalysisTemplateKind = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ClusterAnalysisTemplate"}
)

// CompletedPhases are the phases an AnalysisRun ends in.
var CompletedPhases = []string{"Successful", "Failed", "Error", "Inconclusive"}

// NewRun is an AnalysisRun name in namespace from a ClusterAnalysisTemplate
// or AnalysisTemplate, as Argo Rollouts makes one for an analysis step: the
// template's metrics, dryRun and measurementRetention, and its args with
// the values of args. A template arg that args does not set keeps its own
// value; one with neither, or a key of args the template does not declare,
// is an error. The controller resolves {{args.NAME}} in the metrics.
func NewRun(template *unstructured.Unstructured, namespace, name string, args map[string]string) (*unstructured.Unstructured, error) {
	spec, _, err := unstructured.NestedMap(template.Object, "spec")
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", template.GetName(), err)
	}
	runSpec := map[string]any{}
	for _, field := range []string{"metrics", "dryRun", "measurementRetention"} {
		if v, ok := spec[field]; ok {
			runSpec[field] = v
		}
	}
	if _, ok := runSpec["metrics"]; !ok {
		return nil, fmt.Errorf("template %s has no metrics", template.GetName())
	}
	runArgs, err := mergeArgs(template.GetName(), spec["args"], args)
	if err != nil {
		return nil, err
	}
	if len(runArgs) > 0 {
		runSpec["args"] = runArgs
	}
	run := &unstructured.Unstructured{Object: map[string]any{"spec": runSpec}}
	run.SetGroupVersionKind(AnalysisRunKind)
	run.SetNamespace(namespace)
	run.SetName(name)
	return run, nil
}

// mergeArgs sets the values of args on the template's declared args.
func mergeArgs(template string, declared any, args map[string]string) ([]any, error) {
	list, _ := declared.([]any)
	var out []any
	seen := map[string]bool{}
	for _, d := range list {
		arg, ok := d.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("template %s: an arg is %T, not an object", template, d)
		}
		arg = maps.Clone(arg)
		name, _ := arg["name"].(string)
		seen[name] = true
		if v, ok := args[name]; ok {
			arg["value"] = v
			delete(arg, "valueFrom")
		} else if _, hasValue := arg["value"]; !hasValue && arg["valueFrom"] == nil {
			return nil, fmt.Errorf("template %s: arg %q has no value", template, name)
		}
		out = append(out, arg)
	}
	for name := range args {
		if !seen[name] {
			return nil, fmt.Errorf("template %s declares no arg %q", template, name)
		}
	}
	return out, nil
}

// WaitCompleted polls the AnalysisRun name of namespace until its phase is
// one of CompletedPhases, and returns it.
func WaitCompleted(ctx context.Context, c client.Client, namespace, name string, timeout time.Duration) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	phase := ""
	for {
		run := &unstructured.Unstructured{}
		run.SetGroupVersionKind(AnalysisRunKind)
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, run)
		if err == nil {
			if phase = Phase(run); slices.Contains(CompletedPhases, phase) {
				return run, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("AnalysisRun %s/%s not completed within %s (phase %q, last error %v): %w", namespace, name, timeout, phase, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// Phase is an AnalysisRun's status.phase.
func Phase(run *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(run.Object, "status", "phase")
	return s
}

// Message is an AnalysisRun's status.message.
func Message(run *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(run.Object, "status", "message")
	return s
}

// Measurements are the values the metric name of an AnalysisRun measured, in
// order.
func Measurements(run *unstructured.Unstructured, metric string) []string {
	results, _, _ := unstructured.NestedSlice(run.Object, "status", "metricResults")
	var values []string
	for _, r := range results {
		result, _ := r.(map[string]any)
		if result["name"] != metric {
			continue
		}
		measurements, _ := result["measurements"].([]any)
		for _, m := range measurements {
			measurement, _ := m.(map[string]any)
			v, _ := measurement["value"].(string)
			values = append(values, v)
		}
	}
	return values
}
