package webhook

import (
	"context"
	"errors"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errNotSynced answers a lookup of a cache that has not synced yet.
var errNotSynced = errors.New("the cache has not synced yet")

// syncable is a cache that tells when it has synced: controller-runtime's.
type syncable interface {
	client.Reader
	// WaitForCacheSync blocks until the cache has synced or ctx ends.
	WaitForCacheSync(ctx context.Context) bool
}

// syncedReader reads a cache once it has synced, and answers errNotSynced
// before, without waiting. A cache's reads wait for its lists, which a
// starting manager runs for seconds at many thousand objects, near the API
// server's timeout of the webhook (10 s); the warnings the lookups serve
// are advice, and a review must not wait for them. The manager runs it on
// every replica.
type syncedReader struct {
	cache  syncable
	synced atomic.Bool
}

func newSyncedReader(c syncable) *syncedReader { return &syncedReader{cache: c} }

// Start waits until the cache has synced.
func (s *syncedReader) Start(ctx context.Context) error {
	if s.cache.WaitForCacheSync(ctx) {
		s.synced.Store(true)
	}
	return nil
}

// NeedLeaderElection is false: every replica serves the webhook.
func (s *syncedReader) NeedLeaderElection() bool { return false }

func (s *syncedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if !s.synced.Load() {
		return errNotSynced
	}
	return s.cache.Get(ctx, key, obj, opts...)
}

func (s *syncedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if !s.synced.Load() {
		return errNotSynced
	}
	return s.cache.List(ctx, list, opts...)
}
