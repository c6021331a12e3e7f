package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The offline render carries the round's ClusterPromptLayer, as the
// controller's does, and its edit changes every hash.
func TestOfflineRendersGuardrail(t *testing.T) {
	w, err := newWorld("scale-converge-1", 1, 3, true, created)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range w.renders {
		if prompt := r.configMap.Data[render.SystemPromptKey]; !strings.Contains(prompt, "Platform guardrail, revision 1: never print a secret") ||
			!strings.Contains(prompt, "ask #platform-oncall before deleting data") {
			t.Errorf("persona %d: the system prompt lacks the guardrail:\n%s", i, prompt)
		}
		for _, dep := range []v1alpha1.Dependency{
			{Kind: v1alpha1.ClusterPromptLayerKind, Name: w.guardrail.Name},
			{Kind: v1alpha1.NamespaceKind, Name: w.ns},
		} {
			if !slices.Contains(r.status.Dependencies, dep) {
				t.Errorf("persona %d: dependencies %v lack %v", i, r.status.Dependencies, dep)
			}
		}
	}
	expectEveryHashChanged(t, "the guardrail's edit", layerEdited, guardrailEdited)
}

// The edit of the parent's extension changes every measured Persona's
// hash, as the Persona parent fan-out needs.
func TestOfflineParentEditChangesEveryHash(t *testing.T) {
	expectEveryHashChanged(t, "the parent's edit", guardrailEdited, parentEdited)
}

// expectEveryHashChanged renders 3 Personas offline at from and at to, and
// fails unless each hash at to is set and differs from its hash at from.
func expectEveryHashChanged(t *testing.T, edit string, from, to revision) {
	t.Helper()
	before, err := renderedHashes("scale-converge-1", 1, 3, from)
	if err != nil {
		t.Fatal(err)
	}
	after, err := renderedHashes("scale-converge-1", 1, 3, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 3 {
		t.Fatalf("%d hashes, want 3", len(after))
	}
	for name, h := range after {
		if h == "" || h == before[name] {
			t.Errorf("%s: hash %q after %s, %q before", name, h, edit, before[name])
		}
	}
}

// A namespace without the round's label is not selected.
func TestOfflineGuardrailSelectsByNamespaceLabel(t *testing.T) {
	w, err := newWorld("elsewhere", 1, 1, false, created)
	if err != nil {
		t.Fatal(err)
	}
	w.namespace.Labels = roundLabels(2)
	r, err := newOffline(w.namespace, w.guardrail, w.parent, w.layers[0], w.layers[1]).render(w.personas[0])
	if err != nil {
		t.Fatal(err)
	}
	if prompt := r.configMap.Data[render.SystemPromptKey]; strings.Contains(prompt, "Platform guardrail") {
		t.Errorf("the guardrail of round 1 selects a namespace of round 2:\n%s", prompt)
	}
}

func TestClusterFanOutRows(t *testing.T) {
	r := &report{opts: options{n: 10}, rounds: []*roundResult{
		{fanOut: 4e9, floors: roundFloors{fanOut: measuredOnce(2e9), fanOutSpec: measuredOnce(3e9)}, clusterFanOut: 5e9, clusterFanOutStatuses: 9e9},
		{fanOut: 4e9, floors: roundFloors{fanOut: measuredOnce(2e9), fanOutSpec: measuredOnce(4e9)}, clusterFanOut: 6e9, clusterFanOutStatuses: 5e9},
	}}
	rows := r.timeRows()
	at := slices.IndexFunc(rows, func(row []string) bool { return strings.Contains(row[0], "edit 1 ClusterPromptLayer") })
	if at < 0 || at+2 > len(rows) {
		t.Fatalf("no ClusterPromptLayer rows in %q", rows)
	}
	got := rows[at : at+2]
	want := [][]string{
		{"fan-out: edit 1 ClusterPromptLayer → 10 ConfigMaps updated", "5.50 s", "2.00 s", "2.75× (2.50–3.00)", "≤ 1.5×", "**no**"},
		// Statuses 9 s over 3 s and 5 s over 4 s: ratios 3.00 and 1.25.
		{"  … until every status is current, against the floor with each status patch", "7.00 s", "3.50 s", "2.12× (1.25–3.00)", "≤ 1.3×", "**no**"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rows = %q, want %q", got, want)
	}
	r.rounds[1].fanOutTimeout = "timed out"
	rows = r.timeRows()
	if last := rows[len(rows)-1]; !strings.HasPrefix(last[1], "not run") {
		t.Errorf("after a PromptLayer fan-out timed out: %q", last)
	}
	if n := len(r.roundRows()[0]); n != 17 {
		t.Errorf("the rounds' table has %d columns, want 17", n)
	}
}
