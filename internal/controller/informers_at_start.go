package controller

import (
	"context"
	"fmt"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	clientfeatures "k8s.io/client-go/features"
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

// ListAtStart makes this process's informers fill with one LIST per kind,
// served from the API server's watch cache, instead of a streaming watch
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
