package promptdiff

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/persona-operator/persona-operator/internal/render"
)

// Ref names a persona.
type Ref struct {
	Namespace, Name string
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Side is one side of a comparison: the ConfigMap data of each persona, and
// the label that names the side in the diff headers (old, new, live).
type Side struct {
	Label    string
	Personas map[Ref]map[string]string
	// Unrendered are the personas on this side that do not render (their
	// problems are reported apart): compared with the other side, they are
	// Fixed or Broken rather than Added or Removed.
	Unrendered map[Ref]bool
}

// Status is how a persona differs between two sides.
type Status string

// The statuses of a persona.
const (
	// Added: the persona is only on the new side.
	Added Status = "added"
	// Removed: the persona is only on the old side.
	Removed Status = "removed"
	// Changed: the persona is on both sides and a prompt key differs.
	Changed Status = "changed"
	// Fixed: the persona does not render on the old side and renders on
	// the new; its keys are diffed against nothing.
	Fixed Status = "fixed"
	// Broken: the persona renders on the old side and not on the new.
	Broken Status = "broken"
)

// Result is what kubectl persona diff -o json prints: every persona that
// differs, ordered by namespace and name. Personas that are equal are not
// listed.
type Result struct {
	Personas []Persona `json:"personas"`
}

// Persona is one persona that differs.
type Persona struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Status    Status `json:"status"`
	// Keys are the prompt keys that differ, ordered by key; only for a
	// changed or fixed persona.
	Keys []Key `json:"keys,omitempty"`
}

// Key is the difference of one ConfigMap key.
type Key struct {
	// Key is system-prompt.md, system-prompt.<variant>.md or persona.md.
	Key string `json:"key"`
	// Diff is the unified diff, with --- and +++ headers naming each side
	// as <label>/<namespace>/<name>/<key>.
	Diff string `json:"diff"`
	// Added and Removed count the lines the diff adds and removes.
	Added   int `json:"added"`
	Removed int `json:"removed"`
}

// IsPromptKey reports whether a ConfigMap key holds prompt text that diffs
// compare: system-prompt.md, system-prompt.<variant>.md and persona.md, not
// bundle.json (its inputs show in the prompts they render).
func IsPromptKey(key string) bool {
	if key == render.PersonaKey || key == render.SystemPromptKey {
		return true
	}
	variant, ok := strings.CutPrefix(key, "system-prompt.")
	return ok && len(variant) > len(".md") && strings.HasSuffix(variant, ".md")
}

// Compare lists the personas that differ between the old and the new side.
func Compare(old, new Side) []Persona {
	refs := slices.Collect(maps.Keys(old.Personas))
	for r := range new.Personas {
		if _, ok := old.Personas[r]; !ok {
			refs = append(refs, r)
		}
	}
	slices.SortFunc(refs, func(a, b Ref) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	out := []Persona{}
	for _, r := range refs {
		before, inOld := old.Personas[r]
		after, inNew := new.Personas[r]
		p := Persona{Namespace: r.Namespace, Name: r.Name}
		switch {
		case !inOld && old.Unrendered[r]:
			p.Status = Fixed
			p.Keys = compareKeys(r, old.Label, new.Label, nil, after)
		case !inOld:
			p.Status = Added
		case !inNew && new.Unrendered[r]:
			p.Status = Broken
		case !inNew:
			p.Status = Removed
		default:
			p.Status = Changed
			p.Keys = compareKeys(r, old.Label, new.Label, before, after)
			if len(p.Keys) == 0 {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// compareKeys diffs every prompt key on either side; a key on one side only
// is diffed against nothing.
func compareKeys(r Ref, oldLabel, newLabel string, before, after map[string]string) []Key {
	var keys []string
	for k := range before {
		if IsPromptKey(k) {
			keys = append(keys, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok && IsPromptKey(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []Key
	for _, k := range keys {
		path := "/" + r.String() + "/" + k
		t := Unified(oldLabel+path, newLabel+path, before[k], after[k])
		if t.Diff != "" {
			out = append(out, Key{Key: k, Diff: t.Diff, Added: t.Added, Removed: t.Removed})
		}
	}
	return out
}
