package kube

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func TestStatusMergePatch(t *testing.T) {
	before := &v1alpha1.PersonaStatus{
		ContentHash:  "sha256:a",
		Dependencies: []v1alpha1.Dependency{{Kind: "PromptLayer", Name: "l"}},
		Sections:     []v1alpha1.RenderedSection{{Name: "x", Origin: "default", Bytes: 1}},
	}
	after := before.DeepCopy()
	after.ContentHash = "sha256:b"
	after.Dependencies = nil
	after.Sections = append(after.Sections, v1alpha1.RenderedSection{Name: "y", Origin: "default", Bytes: 2})

	patch, err := statusMergePatch(before, after)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	st := got["status"]
	if st["contentHash"] != "sha256:b" {
		t.Errorf("contentHash not set to the new value: %s", patch)
	}
	if v, ok := st["dependencies"]; !ok || v != nil {
		t.Errorf("emptied dependencies not removed with null: %s", patch)
	}
	if s, ok := st["sections"].([]any); !ok || len(s) != 2 {
		t.Errorf("sections not replaced whole: %s", patch)
	}
	if len(got) != 1 || len(st) != 3 {
		t.Errorf("patch carries more than what changed: %s", patch)
	}
}

// The status patch is the JSON merge patch jsonpatch computes, and applied
// to the status before it gives the status after, for random statuses that
// share some fields, nested ones included, and differ in others.
func TestStatusMergePatchAsJSONPatchComputesIt(t *testing.T) {
	filler := randfill.NewWithSeed(1).NilChance(0.3).NumElements(0, 4)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1500 {
		var before, other v1alpha1.PersonaStatus
		filler.Fill(&before)
		filler.Fill(&other)
		after := before.DeepCopy()
		mixFields(reflect.ValueOf(after).Elem(), reflect.ValueOf(&other).Elem(), rng)

		patch, err := statusMergePatch(&before, after)
		if err != nil {
			t.Fatal(err)
		}
		from, _ := json.Marshal(map[string]any{"status": &before})
		to, _ := json.Marshal(map[string]any{"status": after})
		want, err := jsonpatch.CreateMergePatch(from, to)
		if err != nil {
			t.Fatal(err)
		}
		if patch == nil {
			if string(want) != "{}" {
				t.Fatalf("case %d: no patch where jsonpatch computes %s", i, want)
			}
			continue
		}
		if !reflect.DeepEqual(decodeJSON(t, patch), decodeJSON(t, want)) {
			t.Fatalf("case %d: patch\n%s\nwhere jsonpatch computes\n%s", i, patch, want)
		}
		applied, err := jsonpatch.MergePatch(from, patch)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := withoutNulls(decodeJSON(t, applied)), withoutNulls(decodeJSON(t, to)); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: the patch %s turns the status into\n%s\nnot\n%s", i, patch, applied, to)
		}
	}
}

// mixFields sets about a third of dst's fields to src's, and mixes those
// of the nested structs both have.
func mixFields(dst, src reflect.Value, rng *rand.Rand) {
	for i := range dst.NumField() {
		d, s := dst.Field(i), src.Field(i)
		switch {
		case d.Kind() == reflect.Pointer && d.Elem().Kind() == reflect.Struct && !d.IsNil() && !s.IsNil() && rng.IntN(2) == 0:
			mixFields(d.Elem(), s.Elem(), rng)
		case rng.IntN(3) == 0:
			d.Set(s)
		}
	}
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// withoutNulls drops the members set to null, which a merge patch cannot
// set: it removes them.
func withoutNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				v[k] = withoutNulls(e)
			}
		}
	case []any:
		for i := range v {
			v[i] = withoutNulls(v[i])
		}
	}
	return v
}

// BenchmarkStatusMergePatch patches the status a fan-out changes: a
// Persona of 16 sections and 5 dependencies gets a new hash, Ready message
// and revision, the tenth in its history.
func BenchmarkStatusMergePatch(b *testing.B) {
	before := &v1alpha1.PersonaStatus{
		ObservedGeneration: 1, ConfigMapName: "persona-agent-00007", ContentHash: "sha256:" + strings.Repeat("3b", 32),
		RenderedBytes: 14085, CurrentRevision: 9, LatestRevision: 9,
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Rendered", ObservedGeneration: 1,
			Message: "ConfigMap persona-agent-00007 holds the render: 14085 bytes, sha256:" + strings.Repeat("3b", 32)}},
	}
	for i := range 16 {
		before.Sections = append(before.Sections, v1alpha1.RenderedSection{Name: fmt.Sprintf("platform.section%d", i), Origin: "default", Bytes: int64(100 + i)})
	}
	for i := range 5 {
		before.Dependencies = append(before.Dependencies, v1alpha1.Dependency{Kind: "PromptLayer", Name: fmt.Sprintf("layer-%d", i)})
	}
	for i := range 9 {
		before.History = append(before.History, v1alpha1.RevisionHistoryEntry{Revision: int64(i + 1), ContentHash: "sha256:" + strings.Repeat(fmt.Sprintf("%02x", i), 32),
			Cause: v1alpha1.RevisionInput{Kind: "PromptLayer", Namespace: "team", Name: "team-notes", Generation: int64(i + 1)}})
	}
	after := before.DeepCopy()
	after.ContentHash = "sha256:" + strings.Repeat("4e", 32)
	after.Conditions[0].Message = "ConfigMap persona-agent-00007 holds the render: 14085 bytes, " + after.ContentHash
	after.CurrentRevision, after.LatestRevision = 10, 10
	after.History = append(after.History, v1alpha1.RevisionHistoryEntry{Revision: 10, ContentHash: after.ContentHash,
		Cause: v1alpha1.RevisionInput{Kind: "PromptLayer", Namespace: "team", Name: "team-notes", Generation: 10}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := statusMergePatch(before, after); err != nil {
			b.Fatal(err)
		}
	}
}
