package install

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// diff lists where two decoded YAML values differ, one line per path:
// "path: a ≠ b", with <none> for an absent field.
func diff(a, b any) []string {
	var out []string
	diffAt("", a, b, &out)
	return out
}

func diffAt(path string, a, b any, out *[]string) {
	if reflect.DeepEqual(a, b) {
		return
	}
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			keys := map[string]bool{}
			for k := range av {
				keys[k] = true
			}
			for k := range bv {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				diffAt(path+"."+k, av[k], bv[k], out)
			}
			return
		}
	case []any:
		if bv, ok := b.([]any); ok && len(av) == len(bv) {
			for i := range av {
				diffAt(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
			}
			return
		}
	}
	*out = append(*out, fmt.Sprintf("%s: %s ≠ %s", strings.TrimPrefix(path, "."), show(a), show(b)))
}

// show prints a value on one line: scalars as YAML, lists and maps as JSON.
func show(v any) string {
	switch v.(type) {
	case nil:
		return "<none>"
	case map[string]any, []any:
		if j, err := json.Marshal(v); err == nil {
			return string(j)
		}
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(string(out))
}

// ruleAtoms expands RBAC rules into one string per right they grant, so
// that rules written differently but granting the same compare equal.
func ruleAtoms(rules []any) map[string]bool { return controlplane.RuleRights(rules) }

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// setDiff returns the members of a that b lacks, sorted.
func setDiff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
