package webhook

import (
	"context"
	"fmt"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/render"
)

// The bounds of the launch reads: a snapshot's data is up to about 1 MiB,
// which a read holds two or three times over (the response, the decoded
// ConfigMap) while it lasts, so only maxLaunchReads run at once, whatever
// the number of pods admitted. What is kept of a read is the launch
// settings alone, at most about 8 KiB for a Persona of 16 variants with
// the longest values, and typically a few hundred bytes.
const (
	maxLaunchReads  = 2
	launchCacheSize = 256
)

// launchReader reads the launch settings of a snapshot's bundle.json
// (delivery.md#injection) for the pods injected with it. The manager holds
// no ConfigMap's data, so a snapshot is read from the API server, once: it
// never changes, so what was read of it, by UID, holds for every later pod
// of its revision, and the pods admitted at once for one revision (a
// rollout) share one read.
type launchReader struct {
	api     client.Reader
	kept    *lru.Cache // types.UID → *render.Launches
	flights singleflight.Group
	reads   chan struct{}
}

func newLaunchReader(api client.Reader) *launchReader {
	return &launchReader{api: api, kept: lru.New(launchCacheSize), reads: make(chan struct{}, maxLaunchReads)}
}

// launches is the launch settings of the snapshot name of namespace; uid is
// the snapshot's as the cache knows it.
func (r *launchReader) launches(ctx context.Context, namespace, name string, uid types.UID) (*render.Launches, error) {
	if uid != "" {
		if l, ok := r.kept.Get(uid); ok {
			return l.(*render.Launches), nil
		}
	}
	done := r.flights.DoChan(namespace+"/"+name+"/"+string(uid), func() (any, error) {
		// A read that ended since the look-up above kept it.
		if l, ok := r.kept.Get(uid); ok && uid != "" {
			return l, nil
		}
		// Pods of other requests may wait on this read: it is bounded
		// by its own deadline, not by the request that began it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		select {
		case r.reads <- struct{}{}:
			defer func() { <-r.reads }()
		case <-ctx.Done():
			return nil, fmt.Errorf("wait to read ConfigMap %s: %w", name, ctx.Err())
		}
		var cm corev1.ConfigMap
		if err := r.api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm); err != nil {
			return nil, fmt.Errorf("read ConfigMap %s: %w", name, err)
		}
		l, err := render.ReadLaunches([]byte(cm.Data[render.BundleKey]))
		if err != nil {
			return nil, fmt.Errorf("the %s of ConfigMap %s: %w", render.BundleKey, name, err)
		}
		r.kept.Add(cm.UID, l)
		return l, nil
	})
	select {
	case res := <-done:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*render.Launches), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("read ConfigMap %s: %w", name, ctx.Err())
	}
}
