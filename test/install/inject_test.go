package install

import (
	"reflect"
	"testing"
)

const injectConfig = "persona-operator-mutating-webhook-configuration"

// The pod injection is installed by default, for CREATE of labelled pods
// only, with failurePolicy Fail, a 5 s timeout, no side effects and
// reinvocation; it skips the operator's namespace and kube-system, or, with
// watchNamespaces, reaches exactly the watched namespaces but those two.
func TestChartInjectionScope(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		operator string
		values   []any
	}{
		{"all namespaces", nil, "NotIn", []any{namespace, "kube-system"}},
		{"watched namespaces", []string{"--set", "watchNamespaces={team-a," + namespace + ",kube-system,team-b}"}, "In", []any{"team-a", "team-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := renderChart(t, tc.args...)
			mwc := o.get(t, "MutatingWebhookConfiguration", "", injectConfig)
			hooks := asList(mwc.Object["webhooks"])
			if len(hooks) != 1 {
				t.Fatalf("%d webhooks, want 1", len(hooks))
			}
			w := hooks[0].(map[string]any)
			for path, want := range map[string]any{
				"failurePolicy": "Fail", "sideEffects": "None", "timeoutSeconds": float64(5), "reinvocationPolicy": "IfNeeded",
			} {
				if got := w[path]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %v (%T), want %v", path, got, got, want)
				}
			}
			if got := field(w, "rules"); !reflect.DeepEqual(got, []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"pods"}}}) {
				t.Errorf("rules = %v", got)
			}
			wantObject := map[string]any{"matchExpressions": []any{map[string]any{"key": "prompts.persona-operator.dev/persona", "operator": "Exists"}}}
			if got := w["objectSelector"]; !reflect.DeepEqual(got, wantObject) {
				t.Errorf("objectSelector = %v", got)
			}
			wantNamespace := map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": tc.operator, "values": tc.values}}}
			if got := w["namespaceSelector"]; !reflect.DeepEqual(got, wantNamespace) {
				t.Errorf("namespaceSelector = %v, want %v", got, wantNamespace)
			}
			if ca := field(w, "clientConfig", "caBundle"); ca != nil {
				t.Errorf("caBundle %v is set: the manager injects it", ca)
			}
		})
	}
}
