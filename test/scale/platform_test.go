package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The offline render reads the PromptPlatform as the controller does: its
// completion section replaces the shipped one, its removal drops
// knowledge's, and each of its revisions gives every Persona a hash of its
// own, so each of the three phases changes every ConfigMap.
func TestOfflinePromptPlatform(t *testing.T) {
	hashes := map[string]bool{}
	for _, c := range []struct {
		rev        revision
		completion string
	}{
		{parentEdited, "delivered automatically to your parent agent"},
		{platformCreated, "platform revision 1"},
		{platformEdited, "platform revision 2"},
	} {
		w, err := newWorld("ns", 1, 2, true, c.rev)
		if err != nil {
			t.Fatal(err)
		}
		cm := w.renders[0].configMap
		if prompt := cm.Data[render.SystemPromptKey]; !strings.Contains(prompt, c.completion) {
			t.Errorf("platform revision %d: the system prompt lacks %q:\n%s", c.rev.platform, c.completion, prompt)
		}
		hash := cm.Annotations[delivery.ContentHashAnnotation]
		if hashes[hash] {
			t.Errorf("platform revision %d renders the hash of another revision", c.rev.platform)
		}
		hashes[hash] = true
		origins := w.renders[0].status.Sections
		if i := slices.IndexFunc(origins, func(s v1alpha1.RenderedSection) bool { return s.Name == "platform.completion" }); c.rev.platform > 0 && (i < 0 || origins[i].Origin != "platform/default") {
			t.Errorf("platform revision %d: the completion section's origin is not platform/default: %+v", c.rev.platform, origins)
		}
	}
}

// The PromptPlatform's rows follow the parent's, each pair beside the
// fan-out floors at its own moment; after a timeout the rest are not run.
func TestPlatformFanOutRows(t *testing.T) {
	r := &report{opts: options{n: 10}, rounds: []*roundResult{
		{fanOut: 4e9, parentFanOut: 4e9, floors: roundFloors{fanOut: measuredOnce(2e9), fanOutSpec: measuredOnce(4e9)},
			platformCreate: fanOutResult{configMaps: 2e9, statuses: 4e9}, platformEdit: fanOutResult{configMaps: 3e9, statuses: 6e9},
			platformDelete: fanOutResult{configMaps: 1e9, statuses: 2e9}},
	}}
	rows := r.timeRows()
	want := [][]string{
		{"fan-out: create the PromptPlatform → 10 ConfigMaps updated", "2.00 s", "2.00 s", "1.00×", "≤ 1.5×", "yes"},
		{"  … until every status is current, against the floor with each status patch", "4.00 s", "4.00 s", "1.00×", "≤ 1.3×", "yes"},
		{"fan-out: edit the PromptPlatform → 10 ConfigMaps updated", "3.00 s", "2.00 s", "1.50×", "≤ 1.5×", "yes"},
		{"  … until every status is current, against the floor with each status patch", "6.00 s", "4.00 s", "1.50×", "≤ 1.3×", "**no**"},
		{"fan-out: delete the PromptPlatform → 10 ConfigMaps updated", "1.00 s", "2.00 s", "0.50×", "≤ 1.5×", "yes"},
		{"  … until every status is current, against the floor with each status patch", "2.00 s", "4.00 s", "0.50×", "≤ 1.3×", "yes"},
	}
	if got := rows[len(rows)-6:]; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rows = %q, want %q", got, want)
	}
	r.rounds[0].platformEdit.timeout = "timed out"
	rows = r.timeRows()
	if last := rows[len(rows)-1]; last[0] != platformDeletePhase || !strings.HasPrefix(last[1], "not run (the PromptPlatform fan-out timed out)") {
		t.Errorf("after the PromptPlatform's edit timed out: %q", last)
	}
	if !r.rounds[0].timeout() || len(timeouts(r.rounds)) != 1 {
		t.Errorf("the PromptPlatform's timeout: round timed out %v, timeouts %q", r.rounds[0].timeout(), timeouts(r.rounds))
	}
}
