package install

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The ConfigMap policy's parameter ConfigMap allows the manager's own
// ServiceAccount, in the install's namespace, under the release's names; the
// binding names the policy and that ConfigMap as installed.
func TestConfigMapPolicyNamesTheInstall(t *testing.T) {
	check := func(t *testing.T, o objects) {
		params := o.get(t, "ConfigMap", namespace, configMapWriters)
		o.get(t, "ServiceAccount", namespace, deploymentName)
		usernames := allowed(params, "usernames")
		for _, want := range []string{serviceAccountUser, "system:kube-controller-manager",
			"system:serviceaccount:kube-system:generic-garbage-collector", "system:serviceaccount:kube-system:namespace-controller"} {
			if !slices.Contains(usernames, want) {
				t.Errorf("the policy's usernames %q lack %s", usernames, want)
			}
		}
		if groups := allowed(params, "groups"); !slices.Equal(groups, []string{"system:masters"}) {
			t.Errorf("the policy's groups are %q, want system:masters alone", groups)
		}
		o.get(t, "ValidatingAdmissionPolicy", "", configMapWriters)
		binding := o.get(t, "ValidatingAdmissionPolicyBinding", "", configMapWriters)
		for path, want := range map[string]string{
			"policyName": configMapWriters, "paramRef.name": configMapWriters, "paramRef.namespace": namespace,
			"paramRef.parameterNotFoundAction": "Deny",
		} {
			if got := field(binding.Object, append([]string{"spec"}, strings.Split(path, ".")...)...); got != want {
				t.Errorf("the binding's spec.%s is %v, want %s", path, got, want)
			}
		}
	}
	t.Run("config/default", func(t *testing.T) { check(t, kustomizeBuild(t, "config/default")) })
	t.Run("chart", func(t *testing.T) { check(t, renderChart(t)) })
}

// allowed is the entries of a key of the parameter ConfigMap, one a line.
func allowed(params *unstructured.Unstructured, key string) []string {
	s, _ := field(params.Object, "data", key).(string)
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// The chart's values: other shards' managers and exempt groups join the
// allowed identities; configMapPolicy.enabled=false installs none of it.
func TestChartConfigMapPolicy(t *testing.T) {
	shard := "system:serviceaccount:shard-b:persona-operator-controller-manager"
	o := renderChart(t, "--set", "configMapPolicy.shardManagers[0]="+shard, "--set", "configMapPolicy.exemptGroups[0]=break-glass")
	params := o.get(t, "ConfigMap", namespace, configMapWriters)
	if u := allowed(params, "usernames"); !slices.Contains(u, shard) || !slices.Contains(u, serviceAccountUser) {
		t.Errorf("usernames %q, want %s and %s among them", u, shard, serviceAccountUser)
	}
	if g := allowed(params, "groups"); !slices.Equal(g, []string{"system:masters", "break-glass"}) {
		t.Errorf("groups %q, want system:masters, break-glass", g)
	}

	off := renderChart(t, "--set", "configMapPolicy.enabled=false")
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if off.has(kind, "", configMapWriters) {
			t.Errorf("configMapPolicy.enabled=false installs %s", kind)
		}
	}
	if off.has("ConfigMap", namespace, configMapWriters) {
		t.Errorf("configMapPolicy.enabled=false installs the parameter ConfigMap")
	}

	for _, tc := range []struct{ set, names string }{
		{"configMapPolicy.shardManagers[0]=alice", "/configMapPolicy/shardManagers/0"},
		{"configMapPolicy.exemptGroups[0]= padded", "/configMapPolicy/exemptGroups/0"},
		{"configMapPolicy.enabled=yes", "/configMapPolicy/enabled"},
	} {
		if _, err := helmTemplate(t, "--set", tc.set); err == nil || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("--set %s: want an error naming %s, got %v", tc.set, tc.names, err)
		}
	}
}
