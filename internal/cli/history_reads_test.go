package cli

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/utils/ptr"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// history lists the snapshots' metadata, and reads the data of only those
// whose revisions status.history no longer names: 12 snapshots, 10 in the
// status, 2 reads.
func TestHistoryReadsOnlyTheSnapshotsItPrintsFrom(t *testing.T) {
	const ns = "team"
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", UID: types.UID("uid-p")}}
	var objs, metas []runtime.Object
	for n := int64(1); n <= 12; n++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: delivery.SnapshotName("p", n), Labels: delivery.SnapshotLabels("p", n),
			Annotations:     map[string]string{delivery.SnapshotBytesAnnotation: "100", delivery.ContentHashAnnotation: fmt.Sprint("sha256:", n)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Persona", Name: "p", UID: p.UID, Controller: ptr.To(true)}}},
			Data: map[string]string{render.RevisionKey: `{"revision":` + strconv.FormatInt(n, 10) + `,"cause":{"kind":"Persona","name":"p"}}`}}
		objs = append(objs, cm)
		m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: cm.ObjectMeta}
		metas = append(metas, m)
		if n > 2 {
			p.Status.History = append(p.Status.History, v1alpha1.RevisionHistoryEntry{Revision: n, ContentHash: fmt.Sprint("sha256:", n)})
		}
	}
	core := fake.NewClientset(objs...)
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, metas...)
	c := &cluster{namespace: ns, core: core.CoreV1(), configMapMetadata: meta.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)}
	h, err := c.history(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Revisions) != 12 || h.Revisions[0].Cause.Kind != "Persona" || h.Revisions[0].Bytes != 100 {
		t.Errorf("history %+v, want 12 revisions, the first's cause from its revision.json, 100 bytes each", h.Revisions)
	}
	var gets []string
	for _, a := range core.Actions() {
		switch a.GetVerb() {
		case "get":
			gets = append(gets, a.(interface{ GetName() string }).GetName())
		case "list":
			t.Errorf("history listed ConfigMaps with their data")
		}
	}
	slices.Sort(gets)
	if want := []string{"persona-p.r1", "persona-p.r2"}; !slices.Equal(gets, want) {
		t.Errorf("history read the data of %v, want %v alone", gets, want)
	}
}
