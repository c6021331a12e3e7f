package kube

import (
	"context"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// SourceReader reads the ConfigMaps that templateFrom names: whether one
// exists, and its labels, from the template sources' metadata cache, or by
// name from the API server when the cache does not hold it; its data from
// the API server. Of the data it keeps only the keys templateFrom named,
// each within the template source limit, per resourceVersion, so that the
// Personas of a fan-out read it once and a 1 MiB ConfigMap costs the
// manager the bytes of its key.
type SourceReader struct {
	metadata client.Reader
	live     client.Reader
	// unlabelled is set with --template-source-label=warn: unlabelled
	// ConfigMaps are read all the same.
	unlabelled bool
	mu         sync.Mutex
	held       map[types.NamespacedName]heldSource
}

// heldSource is what is kept of a ConfigMap at one resourceVersion: the
// keys read, a key it does not have as absent.
type heldSource struct {
	resourceVersion string
	keys            map[string]heldKey
}

type heldKey struct {
	text    string
	present bool
}

// NewSourceReader reads the template sources' metadata through metadata,
// and what that does not hold by name, and their data, through live; with
// unlabelled set, it reads ConfigMaps that lack the template-source label
// too (--template-source-label=warn).
func NewSourceReader(metadata, live client.Reader, unlabelled bool) *SourceReader {
	return &SourceReader{metadata: metadata, live: live, unlabelled: unlabelled, held: map[types.NamespacedName]heldSource{}}
}

// ReadsUnlabelled reports whether ConfigMaps that lack the template-source
// label are read all the same (--template-source-label=warn).
func (s *SourceReader) ReadsUnlabelled() bool { return s.unlabelled }

// Get reads the ConfigMap key into cm: its name, version and labels, and of
// its data the key dataKey alone, when it is a template source (or
// unlabelled sources are read). Without dataKey it reads the whole
// ConfigMap from the API server.
func (s *SourceReader) Get(ctx context.Context, key types.NamespacedName, cm *corev1.ConfigMap, dataKey string, hasKey bool) error {
	if !hasKey {
		return s.live.Get(ctx, key, cm)
	}
	m := ConfigMapMetadata()
	err := s.metadata.Get(ctx, key, m)
	if apierrors.IsNotFound(err) {
		// Not a template source, or not in the cache yet: the API server says which.
		err = s.live.Get(ctx, key, m)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			s.forget(key)
		}
		return err
	}
	cm.ObjectMeta = metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, ResourceVersion: m.ResourceVersion, Labels: m.Labels}
	if !resolve.IsTemplateSource(m.Labels) && !s.unlabelled {
		return nil // its data is not to be read
	}
	if k, ok := s.heldKey(key, m.ResourceVersion, dataKey); ok {
		if k.present {
			cm.Data = map[string]string{dataKey: k.text}
		}
		return nil
	}
	var full corev1.ConfigMap
	if err := s.live.Get(ctx, key, &full); err != nil {
		if apierrors.IsNotFound(err) {
			s.forget(key)
		}
		return err
	}
	cm.ResourceVersion, cm.Labels = full.ResourceVersion, full.Labels
	if !resolve.IsTemplateSource(full.Labels) && !s.unlabelled {
		return nil
	}
	text, present := full.Data[dataKey]
	if present {
		cm.Data = map[string]string{dataKey: text}
	}
	s.hold(key, full.ResourceVersion, dataKey, text, present)
	return nil
}

func (s *SourceReader) heldKey(key types.NamespacedName, resourceVersion, dataKey string) (heldKey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[key]
	if !ok || h.resourceVersion != resourceVersion {
		return heldKey{}, false
	}
	k, ok := h.keys[dataKey]
	return k, ok
}

// hold keeps a key of a ConfigMap read at resourceVersion, when its text is
// within the template source limit: a longer one fails the render, and is
// read again when it is needed again. The text is copied out of the read
// ConfigMap, so that none of the rest stays reachable.
func (s *SourceReader) hold(key types.NamespacedName, resourceVersion, dataKey, text string, present bool) {
	if len(text) > render.Default().Limits().MaxSourceBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[key]
	if !ok || h.resourceVersion != resourceVersion {
		h = heldSource{resourceVersion: resourceVersion, keys: map[string]heldKey{}}
	}
	h.keys[strings.Clone(dataKey)] = heldKey{text: strings.Clone(text), present: present}
	s.held[key] = h
}

// forget drops what is held of a ConfigMap that is gone.
func (s *SourceReader) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, key)
}
