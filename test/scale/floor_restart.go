package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
)

// cachedKindsInformerFloor is the time caches of this process's own take to
// start an informer of every kind the manager caches, as it caches them
// (the same kinds and label selectors as cachedKindsFloor, a cache of its
// own for each ConfigMap selector, the snapshots' the manager's own kind of
// cache), and to sync: what the manager's
// controller-runtime caches must at least do before a first render, with
// the same client-go informers and their initial lists
// (controller.ListAtStart, which main calls) and waits for their sync
// (controller.NewCache), but without the process's start. The caches are stopped before it returns.
func cachedKindsInformerFloor(ctx context.Context, cfg *rest.Config, c client.Client) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	metadata := func() client.Object {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		return m
	}
	caches := []struct {
		selector labels.Selector
		objects  []client.Object
	}{
		{nil, []client.Object{&v1alpha1.Persona{}, &v1alpha1.PromptLayer{}, &v1alpha1.ClusterPromptLayer{}, &v1alpha1.PromptPlatform{}, &corev1.Namespace{}}},
		{kube.NotSnapshotSelector, []client.Object{metadata()}},
		{labels.SelectorFromSet(labels.Set{v1alpha1.TemplateSourceLabel: "true"}), []client.Object{metadata()}},
	}
	start := time.Now()
	var g errgroup.Group
	snapshots, err := kube.NewSnapshotCache(ctx, controller.NewCache, rest.CopyConfig(cfg), cache.Options{Scheme: c.Scheme(), Mapper: c.RESTMapper()})
	if err != nil {
		return 0, fmt.Errorf("informer floor: %w", err)
	}
	go func() { _ = snapshots.Cache().Start(ctx) }()
	g.Go(func() error { return snapshots.WaitForSync(ctx) })
	for _, cc := range caches {
		ca, err := controller.NewCache(rest.CopyConfig(cfg), cache.Options{Scheme: c.Scheme(), Mapper: c.RESTMapper(), DefaultLabelSelector: cc.selector})
		if err != nil {
			return 0, fmt.Errorf("informer floor: %w", err)
		}
		for _, obj := range cc.objects {
			if _, err := ca.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
				return 0, fmt.Errorf("informer floor: informer of %T: %w", obj, err)
			}
		}
		go func() { _ = ca.Start(ctx) }()
		g.Go(func() error {
			if !ca.WaitForCacheSync(ctx) {
				return fmt.Errorf("informer floor: the caches did not sync")
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// cachedKindsFloor is the time a bare client takes to list, all at once,
// every kind the manager caches, the way it caches them: Personas,
// PromptLayers, ClusterPromptLayers, PromptPlatforms and Namespaces whole, and the metadata
// of the operator's ConfigMaps (its snapshots apart) and of the template
// sources, by their labels.
func cachedKindsFloor(ctx context.Context, c client.Client) (time.Duration, error) {
	metadataBy := func(selector labels.Selector) func() (client.ObjectList, []client.ListOption) {
		return func() (client.ObjectList, []client.ListOption) {
			return configMapMetadataList(), []client.ListOption{client.MatchingLabelsSelector{Selector: selector}}
		}
	}
	lists := []func() (client.ObjectList, []client.ListOption){
		func() (client.ObjectList, []client.ListOption) { return &v1alpha1.PersonaList{}, nil },
		func() (client.ObjectList, []client.ListOption) { return &v1alpha1.PromptLayerList{}, nil },
		func() (client.ObjectList, []client.ListOption) { return &v1alpha1.ClusterPromptLayerList{}, nil },
		func() (client.ObjectList, []client.ListOption) { return &v1alpha1.PromptPlatformList{}, nil },
		func() (client.ObjectList, []client.ListOption) { return &corev1.NamespaceList{}, nil },
		metadataBy(kube.NotSnapshotSelector),
		metadataBy(kube.SnapshotSelector),
		metadataBy(labels.SelectorFromSet(labels.Set{v1alpha1.TemplateSourceLabel: "true"})),
	}
	start := time.Now()
	var g errgroup.Group
	for _, l := range lists {
		g.Go(func() error {
			list, opts := l()
			if err := c.List(ctx, list, opts...); err != nil {
				return fmt.Errorf("floor: list %T: %w", list, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
