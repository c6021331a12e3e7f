package kube

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// The cache of the snapshots against the real API server holds the
// ConfigMaps with a snapshot's revision label and no other, tells a
// snapshot from one whose labels or controller are not a snapshot's, keeps
// each namespace apart, answers nothing before it has synced, and tells of
// a deletion.
func TestSnapshotCache(t *testing.T) {
	plane := emptyPlane(t)
	ctx := t.Context()
	c := plane.Client
	controller := func(persona string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.PersonaKind, Name: persona, UID: k8stypes.UID("uid-" + persona), Controller: new(true)}}
	}
	for _, ns := range []string{"one", "two"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	wrongLabels := delivery.SnapshotLabels("b", 3) // persona b's labels on persona a's name
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "one", Name: "persona-a.r1", Labels: delivery.SnapshotLabels("a", 1), OwnerReferences: controller("a"),
			Annotations: map[string]string{delivery.ContentHashAnnotation: "sha256:h1", delivery.GuardrailsAnnotation: "sha256:g", "note": "n"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "one", Name: "persona-a.r2", Labels: delivery.SnapshotLabels("a", 2)}}, // no controller
		{ObjectMeta: metav1.ObjectMeta{Namespace: "one", Name: "persona-a.r3", Labels: wrongLabels, OwnerReferences: controller("a")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "one", Name: "persona-a", OwnerReferences: controller("a"), // the live ConfigMap
			Labels: map[string]string{delivery.ManagedByLabel: delivery.ManagedBy, delivery.PersonaLabel: "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "two", Name: "persona-a.r1", Labels: delivery.SnapshotLabels("a", 1), OwnerReferences: controller("a")}},
	} {
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	all, err := NewSnapshotCache(ctx, cache.New, plane.Config, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	one, err := NewSnapshotCache(ctx, cache.New, plane.Config, cache.Options{DefaultNamespaces: NamespaceConfigs([]string{"one"})})
	if err != nil {
		t.Fatal(err)
	}
	waitBriefly, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := all.SnapshotsOf(waitBriefly, "one", "a"); !errors.Is(err, ErrSnapshotsNotSynced) {
		t.Errorf("before its first list: %v, want %v", err, ErrSnapshotsNotSynced)
	}
	deleted := make(chan *delivery.SnapshotMeta, 1)
	if err := all.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if m, ok := obj.(*delivery.SnapshotMeta); ok {
			deleted <- m
		}
	}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*SnapshotCache{all, one} {
		go func() { _ = c.Cache().Start(ctx) }()
		if err := c.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
	}

	for name, c := range map[string]*SnapshotCache{"every namespace": all, "namespace one": one} {
		got, err := c.SnapshotsOf(ctx, "one", "a")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		slices.SortFunc(got, func(a, b *delivery.SnapshotMeta) int { return int(a.Revision - b.Revision) })
		if len(got) != 3 {
			t.Fatalf("%s: persona a's snapshots in one: %d, want r1, r2 and r3 (not the live ConfigMap, not namespace two's)", name, len(got))
		}
		r1 := got[0]
		if !r1.IsSnapshot() || r1.Name != "persona-a.r1" || r1.Namespace != "one" || r1.Persona != "a" || r1.Revision != 1 || r1.Controller != "uid-a" ||
			r1.ContentHash != "sha256:h1" || r1.Guardrails != "sha256:g" || r1.UID == "" || r1.ResourceVersion == "" || r1.Created.IsZero() || r1.Deleting {
			t.Errorf("%s: persona-a.r1 kept as %+v", name, *r1)
		}
		for _, m := range got[1:] {
			if m.IsSnapshot() || m.Controller != "" || m.ContentHash != "" {
				t.Errorf("%s: %s is taken for a snapshot: %+v", name, m.Name, *m)
			}
		}
		if m, err := c.Snapshot(ctx, "one", "persona-a"); err != nil || m != nil {
			t.Errorf("%s: the live ConfigMap is held as %v (%v), want none", name, m, err)
		}
	}
	if got, err := all.SnapshotsIn(ctx, "two"); err != nil || len(got) != 1 || !got[0].IsSnapshot() {
		t.Errorf("namespace two's snapshots: %v (%v), want its persona-a.r1", got, err)
	}
	if got, err := one.SnapshotsIn(ctx, "two"); err != nil || len(got) != 0 {
		t.Errorf("the cache of namespace one holds %d of namespace two's (%v)", len(got), err)
	}

	if err := c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "one", Name: "persona-a.r1"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-deleted:
		if m.Key() != (client.ObjectKey{Namespace: "one", Name: "persona-a.r1"}) || !m.IsSnapshot() {
			t.Errorf("deletion told of %+v, want persona-a.r1 of one", *m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no deletion told")
	}
}
