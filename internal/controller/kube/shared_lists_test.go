package kube

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// Equal lists share one array, which holds neither caller's; lists that
// differ in any field, or in length, do not.
func TestSharedListsShareEqualLists(t *testing.T) {
	list := func(bytes ...int64) []v1alpha1.RenderedSection {
		var out []v1alpha1.RenderedSection
		for i, b := range bytes {
			out = append(out, v1alpha1.RenderedSection{Name: fmt.Sprintf("layer.l%d", i), Origin: "layer/l", Bytes: b})
		}
		return out
	}
	table := newSectionsTable()
	in := list(10, 20)
	a, b := table.share(in), table.share(list(10, 20))
	if &a[0] != &b[0] || !slices.Equal(a, in) || len(a) != 2 {
		t.Fatalf("equal lists: %v at %p and %v at %p, want one array holding %v", a, &a[0], b, &b[0], in)
	}
	if &a[0] == &in[0] {
		t.Error("the shared array is the caller's")
	}
	in[0].Bytes = 99
	if a[0].Bytes != 10 {
		t.Error("changing the caller's list changed the shared one")
	}
	for _, other := range [][]v1alpha1.RenderedSection{
		list(10, 21), list(10), list(10, 20, 30),
		{{Name: "layer.l0", Origin: "layer/m", Bytes: 10}, {Name: "layer.l1", Origin: "layer/l", Bytes: 20}},
		// The encoding keeps the fields apart: the same bytes split otherwise.
		{{Name: "layer.l0layer/l", Origin: "", Bytes: 10}, {Name: "layer.l1", Origin: "layer/l", Bytes: 20}},
	} {
		if c := table.share(other); &c[0] == &a[0] || !slices.Equal(c, other) {
			t.Errorf("%v shares %v's array, or reads %v", other, a, c)
		}
	}
	if got := table.share(nil); got != nil {
		t.Errorf("an empty list became %v", got)
	}
}

// An array no object holds is collected, and the table forgets it: a
// manager whose Personas' sections change with every edit does not keep
// the lists of past edits.
func TestSharedListsForgetCollectedArrays(t *testing.T) {
	table := newSectionsTable()
	const lists = 10_000
	for i := range lists {
		table.share([]v1alpha1.RenderedSection{{Name: "persona", Origin: "persona/p", Bytes: int64(i)}})
	}
	runtime.GC()
	kept := table.share([]v1alpha1.RenderedSection{{Name: "persona", Origin: "persona/p", Bytes: -1}})
	for i := range lists {
		table.share([]v1alpha1.RenderedSection{{Name: "persona", Origin: "persona/p", Bytes: int64(lists + i)}})
	}
	table.mu.Lock()
	n := len(table.byKey)
	table.mu.Unlock()
	if n >= 2*lists {
		t.Errorf("the table holds %d keys after %d lists, none held but one", n, 2*lists+1)
	}
	if again := table.share([]v1alpha1.RenderedSection{{Name: "persona", Origin: "persona/p", Bytes: -1}}); &again[0] != &kept[0] {
		t.Error("a list still held was not found again")
	}
	runtime.KeepAlive(kept)
}

func newSectionsTable() *sharedList[v1alpha1.RenderedSection] {
	return &sharedList[v1alpha1.RenderedSection]{appendKey: sharedSections.appendKey, canonical: sharedSections.canonical}
}
