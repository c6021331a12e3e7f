package release

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func parseTemplate(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const twoArgs = `
apiVersion: argoproj.io/v1alpha1
kind: ClusterAnalysisTemplate
metadata: {name: quality}
spec:
  args:
  - name: url
  - {name: threshold, value: "0.9"}
  metrics:
  - {name: score, provider: {web: {url: "{{args.url}}"}}}
  dryRun:
  - metricName: score
`

func TestNewRunSetsArgsOnTheTemplates(t *testing.T) {
	run, err := NewRun([]*unstructured.Unstructured{parseTemplate(t, twoArgs)}, "team", "quality-1", map[string]string{"url": "http://127.0.0.1/score"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.GroupVersionKind() != AnalysisRunKind || run.GetNamespace() != "team" || run.GetName() != "quality-1" {
		t.Errorf("made %s %s/%s", run.GroupVersionKind(), run.GetNamespace(), run.GetName())
	}
	args, _, _ := unstructured.NestedSlice(run.Object, "spec", "args")
	want := []any{
		map[string]any{"name": "url", "value": "http://127.0.0.1/score"},
		map[string]any{"name": "threshold", "value": "0.9"},
	}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("args %v, want %v", args, want)
	}
	for _, field := range []string{"metrics", "dryRun"} {
		if _, ok := run.Object["spec"].(map[string]any)[field]; !ok {
			t.Errorf("spec.%s not copied from the template", field)
		}
	}
}

func TestNewRunRefusesArgsThatDoNotMatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]string
		want string
	}{
		{name: "missing", args: nil, want: `arg "url" of ClusterAnalysisTemplate quality has no value`},
		{name: "undeclared", args: map[string]string{"url": "u", "treshold": "1"}, want: `declares no arg "treshold"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRun([]*unstructured.Unstructured{parseTemplate(t, twoArgs)}, "team", "quality-1", tc.args, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

const operatorArgs = `
apiVersion: argoproj.io/v1alpha1
kind: ClusterAnalysisTemplate
metadata: {name: by-revision}
spec:
  args:
  - name: canary-revision
  - name: namespace
  metrics:
  - {name: success, provider: {web: {url: "http://127.0.0.1/{{args.namespace}}/{{args.canary-revision}}"}}}
`

// Two templates make one run: their metrics one after another, their
// declared args once each; the operator's args are set where a template
// declares them, and only there.
func TestNewRunOfTwoTemplatesSetsTheOperatorsArgsWhereDeclared(t *testing.T) {
	templates := []*unstructured.Unstructured{parseTemplate(t, twoArgs), parseTemplate(t, operatorArgs)}
	set := map[string]string{"persona": "reviewer", "namespace": "team", "stable-revision": "3", "canary-revision": "4"}
	run, err := NewRun(templates, "team", "reviewer-r4-s1", map[string]string{"url": "http://127.0.0.1/score"}, set)
	if err != nil {
		t.Fatal(err)
	}
	args, _, _ := unstructured.NestedSlice(run.Object, "spec", "args")
	want := []any{
		map[string]any{"name": "url", "value": "http://127.0.0.1/score"},
		map[string]any{"name": "threshold", "value": "0.9"},
		map[string]any{"name": "canary-revision", "value": "4"},
		map[string]any{"name": "namespace", "value": "team"},
	}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("args %v, want %v", args, want)
	}
	metrics, _, _ := unstructured.NestedSlice(run.Object, "spec", "metrics")
	if len(metrics) != 2 {
		t.Errorf("%d metrics, want score and success", len(metrics))
	}
	if _, err := NewRun([]*unstructured.Unstructured{parseTemplate(t, twoArgs), parseTemplate(t, twoArgs)}, "team", "r", map[string]string{"url": "u"}, nil); err == nil ||
		!strings.Contains(err.Error(), `both have a metric "score"`) {
		t.Errorf("two templates of one metric name: %v, want an error naming it", err)
	}
}
