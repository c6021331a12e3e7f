package controller

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
)

// registerInformers asks each cache, before the manager starts, for every
// informer the controllers watch, so that the caches list every kind at
// once when they start. A controller asks for its informers only once the
// manager's cache has synced (Personas and PromptLayers, which the field
// indexes ask for first): the ConfigMaps, ClusterPromptLayers, Namespaces
// and the PromptPlatform would otherwise be listed after them, and a
// restart at N Personas would wait for two lists in a row before its first
// render. The cache of the snapshots asks for its own as it is made
// (kube.NewSnapshotCache).
func registerInformers(ctx context.Context, main, own, sources cache.Cache) error {
	wanted := []struct {
		cache cache.Cache
		obj   client.Object
	}{
		{main, &v1alpha1.Persona{}},
		{main, &v1alpha1.PromptLayer{}},
		{main, &v1alpha1.ClusterPromptLayer{}},
		{main, &v1alpha1.PromptPlatform{}},
		{main, &corev1.Namespace{}},
		{own, kube.ConfigMapMetadata()},
		{sources, kube.ConfigMapMetadata()},
	}
	for _, w := range wanted {
		// Before the cache starts this only registers the informer; the
		// cache starts it, and waits for it, with the others.
		if _, err := w.cache.GetInformer(ctx, w.obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("register the informer of %T: %w", w.obj, err)
		}
	}
	return nil
}

// listAtStartEnv is client-go's own switch of WatchListClient: set to a
// boolean, it decides, and ListAtStart leaves client-go's gates as they are.
const listAtStartEnv = "KUBE_FEATURE_" + string(clientfeatures.WatchListClient)

// ListAtStart makes this process's informers fill with lists, in pages
// (pagedFirstLists) served from the API server's watch cache, instead of a
// streaming watch
// (client-go's WatchListClient, on by default): a stream decodes every
// object as a watch event of its own, framed, in an envelope and
// type-sniffed apart, about twice the CPU of decoding one list, and a
// starting manager's first render waits for it
// (docs/performance.md#restarts). listAtStartEnv, when set, decides
// instead. Call it first, before any informer or client exists.
func ListAtStart() {
	if _, err := strconv.ParseBool(os.Getenv(listAtStartEnv)); err == nil {
		return
	}
	clientfeatures.ReplaceFeatureGates(watchListOff{clientfeatures.FeatureGates()})
}

// watchListOff is client-go's gates with WatchListClient off.
type watchListOff struct{ clientfeatures.Gates }

func (g watchListOff) Enabled(key clientfeatures.Feature) bool {
	return key != clientfeatures.WatchListClient && g.Gates.Enabled(key)
}

// newInformerFunc is controller-runtime's informer constructor
// (cache.Options.NewInformer).
type newInformerFunc = func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer

// firstListPageSize is how many objects each page of an informer's first
// list holds: twice client-go's pager's 500, for half the round trips, each
// page of which waits for the one before it.
const firstListPageSize = 1000

// pagedFirstLists is newInformer (client-go's when nil) whose informers
// ask for their first list at no resourceVersion rather than at "0", so
// that the API server serves it in pages of firstListPageSize objects,
// from its watch cache's snapshot. At "0" the watch cache ignores the
// limit and sends the whole list at once: a starting manager then holds
// every kind's list, its body and its decoding, beside the caches it
// fills, and the collector lets the heap grow to twice that
// (docs/performance.md#a-restarts-memory). A list at no resourceVersion is also a
// consistent one, never behind the API server's latest writes. The lists
// after a watch ends resume from a resourceVersion, as before; a list with
// no limit (the reflector's whole list, should a page have expired) stays
// at "0".
func pagedFirstLists(newInformer newInformerFunc) newInformerFunc {
	if newInformer == nil {
		newInformer = toolscache.NewSharedIndexInformer
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if l, ok := lw.(*toolscache.ListWatch); ok && l.ListWithContextFunc != nil {
			list := l.ListWithContextFunc
			l.ListWithContextFunc = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				switch {
				case opts.Limit <= 0:
				case opts.ResourceVersion == "0":
					opts.ResourceVersion, opts.Limit = "", firstListPageSize
				case opts.Continue != "":
					opts.Limit = firstListPageSize
				}
				return list(ctx, opts)
			}
		}
		return newInformer(lw, obj, resync, indexers)
	}
}
