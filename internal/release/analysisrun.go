package release

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Argo Rollouts' kinds are handled as unstructured objects, so that go.mod
// does not pin Argo Rollouts: the operator reads and writes the fields of
// its v1alpha1 API it names, whichever release runs the AnalysisRuns.
var (
	AnalysisRunKind             = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "AnalysisRun"}
	ClusterAnalysisTemplateKind = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ClusterAnalysisTemplate"}
)

// NewRun is the AnalysisRun name in namespace made of templates, as Argo
// Rollouts makes one for an analysis step: their metrics, dryRun and
// measurementRetention, one after another, and their declared args (the
// first template to declare a name gives it), with the values of args,
// each of which some template must declare, and of set, only where a
// template declares them. A declared arg left with no value, or a metric
// name two templates use, is an error. Argo Rollouts' controller resolves
// {{args.NAME}} in the metrics.
func NewRun(templates []*unstructured.Unstructured, namespace, name string, args, set map[string]string) (*unstructured.Unstructured, error) {
	runSpec := map[string]any{}
	var declared []map[string]any
	metricOf := map[string]string{}
	for _, template := range templates {
		spec, _, err := unstructured.NestedMap(template.Object, "spec")
		if err != nil {
			return nil, fmt.Errorf("ClusterAnalysisTemplate %s: %w", template.GetName(), err)
		}
		metrics, _ := spec["metrics"].([]any)
		if len(metrics) == 0 {
			return nil, fmt.Errorf("ClusterAnalysisTemplate %s has no metrics", template.GetName())
		}
		for _, m := range metrics {
			metric, _ := m.(map[string]any)
			metricName, _ := metric["name"].(string)
			if other, ok := metricOf[metricName]; ok {
				return nil, fmt.Errorf("ClusterAnalysisTemplates %s and %s both have a metric %q", other, template.GetName(), metricName)
			}
			metricOf[metricName] = template.GetName()
		}
		for _, field := range []string{"metrics", "dryRun", "measurementRetention"} {
			if list, ok := spec[field].([]any); ok {
				prior, _ := runSpec[field].([]any)
				runSpec[field] = append(prior, list...)
			}
		}
		list, _ := spec["args"].([]any)
		for _, d := range list {
			arg, ok := d.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("ClusterAnalysisTemplate %s: an arg is %T, not an object", template.GetName(), d)
			}
			if !slices.ContainsFunc(declared, func(a map[string]any) bool { return a["name"] == arg["name"] }) {
				declared = append(declared, maps.Clone(arg))
			}
		}
	}
	seen := map[string]bool{}
	for _, arg := range declared {
		name, _ := arg["name"].(string)
		seen[name] = true
		v, ok := args[name]
		if !ok {
			v, ok = set[name]
		}
		if ok {
			arg["value"] = v
			delete(arg, "valueFrom")
		} else if _, hasValue := arg["value"]; !hasValue && arg["valueFrom"] == nil {
			return nil, fmt.Errorf("arg %q of %s has no value", name, templateNames(templates))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		if !seen[name] {
			return nil, fmt.Errorf("%s declares no arg %q", templateNames(templates), name)
		}
	}
	if len(declared) > 0 {
		list := make([]any, len(declared))
		for i, a := range declared {
			list[i] = a
		}
		runSpec["args"] = list
	}
	run := &unstructured.Unstructured{Object: map[string]any{"spec": runSpec}}
	run.SetGroupVersionKind(AnalysisRunKind)
	run.SetNamespace(namespace)
	run.SetName(name)
	return run, nil
}

func templateNames(templates []*unstructured.Unstructured) string {
	names := make([]string, len(templates))
	for i, t := range templates {
		names[i] = t.GetName()
	}
	if len(names) == 1 {
		return "ClusterAnalysisTemplate " + names[0]
	}
	return "ClusterAnalysisTemplates " + strings.Join(names, ", ")
}

// RunPhase is an AnalysisRun's status.phase, and RunMessage its
// status.message.
func RunPhase(run *unstructured.Unstructured) AnalysisPhase {
	s, _, _ := unstructured.NestedString(run.Object, "status", "phase")
	return AnalysisPhase(s)
}

func RunMessage(run *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(run.Object, "status", "message")
	return s
}
