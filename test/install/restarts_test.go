package install

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// The objects of restarts on change (config/components/restart-workloads),
// by kind and name.
var restartObjects = []struct{ kind, name string }{
	{"ClusterRole", "persona-operator-restart-workloads-role"},
	{"ClusterRoleBinding", "persona-operator-restart-workloads-rolebinding"},
	{"ValidatingAdmissionPolicy", "persona-operator-restart-workloads"},
	{"ValidatingAdmissionPolicyBinding", "persona-operator-restart-workloads"},
}

// restartWorkloads.enabled grants the manager its rights on workloads, with
// the policy that bounds them to the manager of the release's namespace,
// and sets --restart-workloads; by default the chart has none of it
// (TestChartMatchesConfig compares both with config/).
func TestChartRestartWorkloads(t *testing.T) {
	off := renderChart(t)
	_, c := manager(t, off)
	wantArgs(t, c, nil, []string{"--restart-workloads"})
	for _, o := range restartObjects {
		if off.has(o.kind, "", o.name) {
			t.Errorf("%s %s installed by default", o.kind, o.name)
		}
	}

	const ns = "agents-system"
	on := renderChart(t, "--set", "restartWorkloads.enabled=true", "--namespace", ns)
	for _, u := range on {
		decodeStrict(t, u)
	}
	d, ok := decodeStrict(t, on.get(t, "Deployment", ns, deploymentName)).(*appsv1.Deployment)
	if !ok {
		t.Fatal("the Deployment does not decode")
	}
	wantArgs(t, d.Spec.Template.Spec.Containers[0], []string{"--restart-workloads"}, nil)
	for _, o := range restartObjects {
		on.get(t, o.kind, "", o.name)
	}
	rights := ruleAtoms(asList(on.get(t, "ClusterRole", "", "persona-operator-restart-workloads-role").Object["rules"]))
	want := map[string]bool{}
	for _, res := range []string{`"apps" deployments`, `"apps" statefulsets`, `"apps" daemonsets`, `"argoproj.io" rollouts`} {
		for _, verb := range []string{"get", "list", "watch", "patch"} {
			want[res+": "+verb] = true
		}
	}
	// The kinds a restart label is told on (RestartLabelIgnored), read only.
	for _, res := range []string{`"apps" replicasets`, `"batch" jobs`, `"batch" cronjobs`} {
		for _, verb := range []string{"list", "watch"} {
			want[res+": "+verb] = true
		}
	}
	if d := append(setDiff(rights, want), setDiff(want, rights)...); len(d) > 0 {
		t.Errorf("the restarts' role differs from get, list, watch and patch on the four kinds and list and watch on the misplaced ones:\n  %s", strings.Join(d, "\n  "))
	}
	binding := on.get(t, "ClusterRoleBinding", "", "persona-operator-restart-workloads-rolebinding")
	if s := subjects(binding); len(s) != 1 || !s["ServiceAccount "+ns+"/"+deploymentName] {
		t.Errorf("the restarts' binding binds %v, want the manager's ServiceAccount in %s", s, ns)
	}
	policy := on.get(t, "ValidatingAdmissionPolicy", "", "persona-operator-restart-workloads")
	conditions := asList(field(policy.Object, "spec", "matchConditions"))
	if len(conditions) != 1 || !strings.Contains(field(conditions[0].(map[string]any), "expression").(string),
		"'system:serviceaccount:"+ns+":"+deploymentName+"'") {
		t.Errorf("the policy does not match the manager of %s: %v", ns, conditions)
	}
	if got := field(on.get(t, "ValidatingAdmissionPolicyBinding", "", "persona-operator-restart-workloads").Object, "spec", "policyName"); got != "persona-operator-restart-workloads" {
		t.Errorf("the policy binding binds %v", got)
	}
}
