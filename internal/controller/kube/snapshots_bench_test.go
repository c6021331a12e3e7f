package kube

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// BenchmarkSnapshotCacheBytes reports what the cache of the snapshots holds
// per snapshot (B/snapshot, the heap after a collection over the 8,000
// Personas' 24,000 snapshots, the index included) beside what the same
// snapshots cost held whole, as the cache of the operator's ConfigMaps held
// them before: their metadata less managedFields, interned, indexed by
// namespace and by Persona.
func BenchmarkSnapshotCacheBytes(b *testing.B) {
	const personas, revisions = 8000, 3
	decoded := func(p, n int) *metav1.PartialObjectMetadata {
		persona := fmt.Sprintf("persona-%05d", p)
		m := ConfigMapMetadata()
		m.ObjectMeta = metav1.ObjectMeta{Namespace: "team-a", Name: delivery.SnapshotName(persona, int64(n)),
			UID: k8stypes.UID(fmt.Sprintf("0c6f1e0a-%04d-4d6e-9d3b-%012d", n, p)), ResourceVersion: strconv.Itoa(100000 + p*revisions + n),
			CreationTimestamp: metav1.NewTime(time.Unix(1796400000, 0)), Labels: delivery.SnapshotLabels(persona, int64(n)),
			Annotations: map[string]string{delivery.ContentHashAnnotation: fmt.Sprintf("sha256:%064x", p*revisions+n),
				delivery.SnapshotBytesAnnotation: "14100", delivery.GuardrailsAnnotation: "sha256:" + fmt.Sprintf("%064x", 7)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.PersonaKind, Name: persona,
				UID: k8stypes.UID(fmt.Sprintf("7d1e3c52-%04d-4a1b-8c2d-%012d", 0, p)), Controller: new(true), BlockOwnerDeletion: new(true)}}}
		return m
	}
	whole := func(obj any) (any, error) {
		InternMeta(obj.(*metav1.PartialObjectMetadata))
		return obj, nil
	}
	wholeByPersona := func(obj any) ([]string, error) {
		m := obj.(*metav1.PartialObjectMetadata)
		return []string{m.Namespace + "/" + m.Labels[delivery.PersonaLabel]}, nil
	}
	for _, c := range []struct {
		name     string
		keep     func(any) (any, error)
		indexers toolscache.Indexers
	}{
		{"compact", compactSnapshot, toolscache.Indexers{toolscache.NamespaceIndex: indexSnapshotByNamespace, snapshotsByPersona: indexSnapshotByPersona}},
		{"whole metadata", whole, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, snapshotsByPersona: wholeByPersona}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var perSnapshot float64
			for b.Loop() {
				before := heapAfterCollection()
				store := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, c.indexers)
				for p := range personas {
					for n := 1; n <= revisions; n++ {
						obj, _ := c.keep(decoded(p, n))
						if err := store.Add(obj); err != nil {
							b.Fatal(err)
						}
					}
				}
				perSnapshot = float64(heapAfterCollection()-before) / (personas * revisions)
				runtime.KeepAlive(store)
			}
			b.ReportMetric(perSnapshot, "B/snapshot")
		})
	}
}

func heapAfterCollection() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
