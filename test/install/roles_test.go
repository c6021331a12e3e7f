package install

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

const apiGroup = "prompts.persona-operator.dev"

// Kubernetes' roles a ClusterRole joins by label.
var defaultRoles = []string{"admin", "edit", "view"}

// ClusterPromptLayers and the PromptPlatform are in none of the roles
// aggregated into admin, edit or view: a namespace's admin or editor cannot
// write a guardrail or the platform's sections, nor be given them through
// those roles. The platform team's role and the tenants' read-only one exist,
// grant exactly their rights on both kinds, and are aggregated nowhere
// (clusterpromptlayers.md#how-a-platform-team-and-a-prompt-author-split-the-work,
// promptplatforms.md#who-may-write-it).
func TestClusterPromptLayerRoles(t *testing.T) {
	check := func(t *testing.T, o objects) {
		for _, k := range o.ofKind("ClusterRole").keys() {
			u := o[k]
			var to []string
			for _, r := range defaultRoles {
				if u.GetLabels()["rbac.authorization.k8s.io/aggregate-to-"+r] == "true" {
					to = append(to, r)
				}
			}
			if len(to) == 0 {
				continue
			}
			for _, right := range slices.Sorted(maps.Keys(ruleAtoms(asList(u.Object["rules"])))) {
				if grantsPlatformTeamKinds(right) {
					t.Errorf("%s, aggregated to %s, grants %s", k, strings.Join(to, ", "), right)
				}
			}
		}

		for role, verbs := range map[string][]string{
			"persona-operator-clusterpromptlayer-editor-role": {"create", "delete", "get", "list", "patch", "update", "watch"},
			"persona-operator-clusterpromptlayer-viewer-role": {"get", "list", "watch"},
		} {
			u := o.get(t, "ClusterRole", "", role)
			want := map[string]bool{}
			for _, resource := range platformTeamResources {
				want[`"`+apiGroup+`" `+resource+`/status: get`] = true
				for _, v := range verbs {
					want[`"`+apiGroup+`" `+resource+`: `+v] = true
				}
			}
			got := ruleAtoms(asList(u.Object["rules"]))
			if !maps.Equal(got, want) {
				t.Errorf("%s grants:\n  %s\nwant:\n  %s", role, strings.Join(slices.Sorted(maps.Keys(got)), "\n  "),
					strings.Join(slices.Sorted(maps.Keys(want)), "\n  "))
			}
			if labels := aggregation(u)["labels"].(map[string]any); len(labels) > 0 {
				t.Errorf("%s is aggregated: %v", role, labels)
			}
		}
	}
	t.Run("config/default", func(t *testing.T) { check(t, kustomizeBuild(t, "config/default")) })
	t.Run("chart", func(t *testing.T) { check(t, renderChart(t)) })
}

// platformTeamResources are the kinds only the platform team writes.
var platformTeamResources = []string{"clusterpromptlayers", "promptplatforms"}

// grantsPlatformTeamKinds reports whether a right of ruleAtoms reaches
// ClusterPromptLayers, PromptPlatforms or a subresource of theirs, wildcards
// included.
func grantsPlatformTeamKinds(right string) bool {
	what, _, _ := strings.Cut(right, ": ")
	group, resource, _ := strings.Cut(what, " ")
	if group != `"`+apiGroup+`"` && group != `"*"` {
		return false
	}
	resource, _, _ = strings.Cut(resource, " ") // a resourceName follows
	resource, _, _ = strings.Cut(resource, "/")
	return resource == "*" || slices.Contains(platformTeamResources, resource)
}
