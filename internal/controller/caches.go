package controller

import (
	"context"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// A cluster can hold hundreds of MiB of ConfigMaps that are none of the
// operator's business, so the manager holds no ConfigMap's data, and knows
// by metadata only the ConfigMaps of two label-selected watches: its own
// (delivery.ManagedByLabel), the Personas' with all of it (to write them
// back whole), and the template sources (v1alpha1.TemplateSourceLabel),
// reduced to what the watches read. A ConfigMap that is in neither, such as
// a foreign persona-<name>, it reads by name when it needs to. The data of
// a Persona's ConfigMap it knows by its content hash at the versions it
// wrote or read (ownWrites); of a template source, only the keys that
// templateFrom names (templateSources).

// CacheOptions are the manager's cache options: the watched namespaces
// (none: all).
func CacheOptions(namespaces []string) cache.Options {
	return cache.Options{
		DefaultNamespaces: namespaceConfigs(namespaces),
		DefaultTransform:  internObjects,
	}
}

// ClientOptions are the manager's client options: ConfigMaps are read from
// the API server, never through a cache of them all with their data.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}}}}
}

func namespaceConfigs(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// The label selectors of the two ConfigMap watches.
var (
	ownSelector            = labels.SelectorFromSet(labels.Set{delivery.ManagedByLabel: delivery.ManagedBy})
	templateSourceSelector = labels.SelectorFromSet(labels.Set{v1alpha1.TemplateSourceLabel: "true"})
)

// newConfigMapMetadataCache is a cache of the metadata of the ConfigMaps
// in namespaces that selector selects (nil: all), each reduced by trim.
func newConfigMapMetadataCache(mgr ctrl.Manager, namespaces []string, selector labels.Selector, trim toolscache.TransformFunc) (cache.Cache, error) {
	return cache.New(mgr.GetConfig(), cache.Options{
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultNamespaces:    namespaceConfigs(namespaces),
		DefaultLabelSelector: selector,
		DefaultTransform:     trim,
	})
}

// trimConfigMapMetadata keeps of a Persona's own ConfigMap all of its
// metadata but managedFields, and reduces any other as trimSourceMetadata.
func trimConfigMapMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || !personasOwn(m) {
		return trimSourceMetadata(obj)
	}
	internMeta(m)
	return m, nil
}

// trimSourceMetadata reduces a ConfigMap's metadata to what the watches
// read: name, version, its controller and the template-source label. Only
// the controller is kept of the owners: anyone who may write a ConfigMap may
// give it thousands of owner references, which the cache would otherwise
// hold for every ConfigMap it watches. The template
// sources' cache keeps no more even of a Persona's own ConfigMap, which the
// other cache holds whole.
func trimSourceMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	var kept map[string]string
	if v, ok := m.Labels[v1alpha1.TemplateSourceLabel]; ok {
		kept = map[string]string{v1alpha1.TemplateSourceLabel: v}
	}
	m.ObjectMeta = metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Labels: kept,
		OwnerReferences: controllerOnly(m), DeletionTimestamp: m.DeletionTimestamp,
	}
	internMeta(m)
	return m, nil
}

// controllerOnly is obj's controller owner reference alone, or none.
func controllerOnly(obj metav1.Object) []metav1.OwnerReference {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []metav1.OwnerReference{*ref}
	}
	return nil
}

func configMapMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return m
}

// watchConfigMapMetadata is a source of the metadata cache's ConfigMap
// events for h.
func watchConfigMapMetadata(c cache.Cache, h handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request]) source.Source {
	return source.Kind(c, configMapMetadata(), h)
}

// sourceReader reads the ConfigMaps that templateFrom names: whether one
// exists, and its labels, from the template sources' metadata cache, or by
// name from the API server when the cache does not hold it; its data from
// the API server. Of the data it keeps only the keys templateFrom named,
// each within the template source limit, per resourceVersion, so that the
// Personas of a fan-out read it once and a 1 MiB ConfigMap costs the
// manager the bytes of its key.
type sourceReader struct {
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

func newSourceReader(metadata, live client.Reader, unlabelled bool) *sourceReader {
	return &sourceReader{metadata: metadata, live: live, unlabelled: unlabelled, held: map[types.NamespacedName]heldSource{}}
}

// get reads the ConfigMap key into cm: its name, version and labels, and of
// its data the key dataKey alone, when it is a template source (or
// unlabelled sources are read). Without dataKey it reads the whole
// ConfigMap from the API server.
func (s *sourceReader) get(ctx context.Context, key types.NamespacedName, cm *corev1.ConfigMap, dataKey string, hasKey bool) error {
	if !hasKey {
		return s.live.Get(ctx, key, cm)
	}
	m := configMapMetadata()
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
	cm.ObjectMeta.ResourceVersion, cm.Labels = full.ResourceVersion, full.Labels
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

func (s *sourceReader) heldKey(key types.NamespacedName, resourceVersion, dataKey string) (heldKey, bool) {
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
func (s *sourceReader) hold(key types.NamespacedName, resourceVersion, dataKey, text string, present bool) {
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
func (s *sourceReader) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, key)
}

// lookup is what the controllers resolve through: the manager's cache, and
// for ConfigMaps the template sources. With reads set, it logs what it read.
type lookup struct {
	cached     client.Reader
	configMaps *sourceReader
	reads      *readLog
}

// ReadsUnlabelledSources tells resolve whether unlabelled templateFrom
// ConfigMaps are read (--template-source-label=warn).
func (l lookup) ReadsUnlabelledSources() bool { return l.configMaps.unlabelled }

func (l lookup) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := l.get(ctx, key, obj, opts...)
	if l.reads != nil {
		switch {
		case err == nil:
			l.reads.read(obj)
		case apierrors.IsNotFound(err):
			l.reads.missing(obj, key)
		}
	}
	return err
}

func (l lookup) get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		dataKey, hasKey := configMapKey(opts)
		return l.configMaps.get(ctx, key, cm, dataKey, hasKey)
	}
	return l.cached.Get(ctx, key, obj, opts...)
}

// List reads the cache without copying its objects: the resolver only
// reads them, and it lists the ClusterPromptLayers on every render.
func (l lookup) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.cached.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	if l.reads != nil {
		return l.reads.readList(list)
	}
	return nil
}

// configMapKey is the key a ConfigMap is read for (resolve.ConfigMapKey).
func configMapKey(opts []client.GetOption) (string, bool) {
	for _, o := range opts {
		if k, ok := o.(resolve.ConfigMapKey); ok {
			return string(k), true
		}
	}
	return "", false
}
