package persona

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/fairshare"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/status"
)

// Every store of the reconciler that holds an entry per Persona is one
// forget reaches: a store added as a field without it fails here.
func TestForgetReachesEveryStore(t *testing.T) {
	r := newReconciler(nil, nil, nil, nil, nil, nil, nil, options{})
	listed := map[uintptr]bool{}
	for _, s := range r.stores {
		listed[reflect.ValueOf(s).Pointer()] = true
	}
	v := reflect.ValueOf(r).Elem()
	storeType := reflect.TypeFor[personaStore]()
	found := 0
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Pointer || !f.Type().Implements(storeType) {
			continue
		}
		found++
		if f.IsNil() || !listed[f.Pointer()] {
			t.Errorf("store %s is not among the stores forget drops", v.Type().Field(i).Name)
		}
	}
	if found != len(r.stores) {
		t.Errorf("%d stores among the fields, %d listed", found, len(r.stores))
	}
}

func TestForgetDropsThePersonaFromEachStore(t *testing.T) {
	r := newReconciler(nil, nil, nil, nil, nil, nil, nil, options{Gate: fairshare.NewGate(1, 1)})
	gone := types.NamespacedName{Namespace: "team", Name: "gone"}
	kept := types.NamespacedName{Namespace: "team", Name: "kept"}
	ref := objectRef{Kind: "PromptLayer", Namespace: "team", Name: "later"}
	for _, p := range []types.NamespacedName{gone, kept} {
		cm := client.ObjectKey{Namespace: p.Namespace, Name: "persona-" + p.Name}
		r.writes.read(cm, "7", "hash", nil)
		r.deferred.put(t.Context(), p, inputs{1}, status.Render{Hash: "hash"}, v1alpha1.RevisionHistoryEntry{}, nil, "")
		r.waiting.set(p, []objectRef{ref})
		r.overruns.add(p, 1, &render.Bundle{})
	}
	holder, _ := r.parked.Enter("team", types.NamespacedName{Namespace: "team", Name: "holder"}, parkedRender)
	for _, p := range []types.NamespacedName{gone, kept} {
		if _, ok := r.parked.Enter(p.Namespace, p, parkedRender); ok {
			t.Fatalf("%s got a place, want it parked", p)
		}
	}
	r.forget(gone)

	if _, ok := r.writes.hashAt(client.ObjectKey{Namespace: "team", Name: "persona-gone"}, "7"); ok {
		t.Error("the own writes still know the ConfigMap of the Persona forgotten")
	}
	if _, ok := r.writes.hashAt(client.ObjectKey{Namespace: "team", Name: "persona-kept"}, "7"); !ok {
		t.Error("the own writes forgot another Persona's ConfigMap")
	}
	if _, ok := r.deferred.take(gone); ok {
		t.Error("a deferred status is still held for the Persona forgotten")
	}
	if _, ok := r.deferred.take(kept); !ok {
		t.Error("another Persona's deferred status was dropped")
	}
	if got := r.waiting.waiters(ref); !reflect.DeepEqual(got, []string{"kept"}) {
		t.Errorf("waiters = %v, want [kept]", got)
	}
	if _, ok := r.overruns.last[gone]; ok {
		t.Error("the overruns of the Persona forgotten are still counted")
	}
	if _, ok := r.overruns.last[kept]; !ok {
		t.Error("another Persona's overruns were dropped")
	}
	if n := r.parked.Len(); n != 1 {
		t.Errorf("%d parked, want the Persona kept alone", n)
	}
	holder.Leave()
}
