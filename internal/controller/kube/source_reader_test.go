package kube

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func TestSourceReaderKeepsTheNamedKeyOnly(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("x", 1<<20-1<<10)
	server := &configMapServer{items: map[string]*corev1.ConfigMap{
		"docs": {ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "ns", ResourceVersion: "1", Labels: map[string]string{v1alpha1.TemplateSourceLabel: "true"}},
			Data: map[string]string{"big": big, "k": "y"}},
		"plain": {ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "ns", ResourceVersion: "1"}, Data: map[string]string{"k": "secret"}},
	}}
	s := NewSourceReader(server, server, false)
	key := types.NamespacedName{Namespace: "ns", Name: "docs"}
	read := func(name, dataKey string) *corev1.ConfigMap {
		t.Helper()
		var cm corev1.ConfigMap
		if err := s.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, &cm, dataKey, true); err != nil {
			t.Fatal(err)
		}
		return &cm
	}

	if cm := read("docs", "k"); len(cm.Data) != 1 || cm.Data["k"] != "y" {
		t.Errorf("data %v, want only k", cm.Data)
	}
	if got := s.held[key].keys; len(got) != 1 || got["k"] != (heldKey{text: "y", present: true}) {
		t.Errorf("held %v, want k alone", got)
	}
	read("docs", "k")
	if server.fullReads != 1 {
		t.Errorf("%d full reads of an unchanged source, want 1", server.fullReads)
	}
	// A key over the 64 KiB source limit is returned, for the render to refuse, but not held.
	if cm := read("docs", "big"); cm.Data["big"] != big {
		t.Error("the big key was not returned")
	}
	if _, ok := s.held[key].keys["big"]; ok {
		t.Error("a key over the source limit is held")
	}
	// A key the ConfigMap lacks is held as absent.
	if cm := read("docs", "none"); cm.Data != nil {
		t.Errorf("data %v for an absent key", cm.Data)
	}
	// A new version is read again.
	server.items["docs"].ResourceVersion, server.items["docs"].Data["k"] = "2", "z"
	if cm := read("docs", "k"); cm.Data["k"] != "z" {
		t.Errorf("data %v after a change", cm.Data)
	}
	// An unlabelled ConfigMap's data is not read at all.
	before := server.fullReads
	if cm := read("plain", "k"); cm.Data != nil || cm.Name != "plain" {
		t.Errorf("unlabelled: %+v", cm)
	}
	if server.fullReads != before {
		t.Error("an unlabelled ConfigMap was read whole")
	}
	// Unless unlabelled sources are read.
	if cm := readKeyK(t, NewSourceReader(server, server, true), "plain"); cm.Data["k"] != "secret" {
		t.Errorf("with unlabelled sources read: %v", cm.Data)
	}
}

// configMapServer is the API server's ConfigMaps, for a SourceReader: its
// metadata cache and its live reader. It counts full reads.
type configMapServer struct {
	items     map[string]*corev1.ConfigMap
	fullReads int
}

func (s *configMapServer) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	cm, ok := s.items[key.Name]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		o.ObjectMeta = *cm.ObjectMeta.DeepCopy()
	case *corev1.ConfigMap:
		s.fullReads++
		cm.DeepCopyInto(o)
	}
	return nil
}

func (s *configMapServer) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// readKeyK reads the key "k" of the ConfigMap name in "ns" through s.
func readKeyK(t *testing.T, s *SourceReader, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := s.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, &cm, "k", true); err != nil {
		t.Fatal(err)
	}
	return &cm
}
