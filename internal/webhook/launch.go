package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/fairshare"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The bounds of the launch reads. A snapshot's data is up to about 1 MiB,
// which a read holds two or three times over (the response, the decoded
// ConfigMap) while it lasts, so only maxLaunchReads run at once, whatever
// the number of pods admitted; the reads take turns by the address of the
// client whose review asked for them, so that reviews sent to the port by
// anyone else (for snapshots of any namespace) hold up the API server's by
// one turn of each such address. A pod waits for the read of its snapshot
// until launchWait after the read began, never longer: the pod reviews
// waiting on a read hold their share of the injection's memory bound, so a
// slow API server must not keep a rollout's other pods out of it. What is
// kept of a read is the launch settings alone, at most about 8 KiB for a
// Persona of 16 variants with the longest values, typically a few hundred
// bytes, of the last launchCacheSize snapshots read.
const (
	maxLaunchReads  = 2
	launchWait      = time.Second
	launchCacheSize = 1024
)

// errLaunchSlow is a read that did not end within launchWait of its start.
var errLaunchSlow = errors.New("its read has not ended yet")

// launchReader reads the launch settings of a snapshot's bundle.json
// (delivery.md#injection) for the pods injected with it. The manager holds
// no ConfigMap's data, so a snapshot is read from the API server, once: it
// never changes, so what was read of it, by UID, holds for every later pod
// of its revision, and the pods admitted at once for one revision (a
// rollout) share one read.
type launchReader struct {
	api   client.Reader
	kept  *lru.Cache // types.UID → *render.Launches
	reads *fairshare.Weighted

	mu      sync.Mutex
	flights map[string]*launchFlight
}

// launchFlight is one read of a snapshot, which the pods of its revision
// admitted meanwhile wait on.
type launchFlight struct {
	giveUp   time.Time
	done     chan struct{}
	launches *render.Launches
	err      error
}

func newLaunchReader(api client.Reader) *launchReader {
	return &launchReader{api: api, kept: lru.New(launchCacheSize), reads: fairshare.NewWeighted(maxLaunchReads),
		flights: map[string]*launchFlight{}}
}

// launches is the launch settings of the snapshot name of namespace; uid is
// the snapshot's as the cache knows it.
func (r *launchReader) launches(ctx context.Context, namespace, name string, uid types.UID) (*render.Launches, error) {
	if l, ok := r.kept.Get(uid); ok && uid != "" {
		return l.(*render.Launches), nil
	}
	key := namespace + "/" + name + "/" + string(uid)
	r.mu.Lock()
	f := r.flights[key]
	if f == nil {
		// A read that ended since the look-up above kept what it found
		// before it let go of its flight.
		if l, ok := r.kept.Get(uid); ok && uid != "" {
			r.mu.Unlock()
			return l.(*render.Launches), nil
		}
		f = &launchFlight{giveUp: time.Now().Add(launchWait), done: make(chan struct{})}
		r.flights[key] = f
		go r.read(f, key, clientOf(ctx), client.ObjectKey{Namespace: namespace, Name: name})
	}
	r.mu.Unlock()
	wait := time.NewTimer(time.Until(f.giveUp))
	defer wait.Stop()
	select {
	case <-f.done:
		return f.launches, f.err
	case <-wait.C:
		return nil, fmt.Errorf("read ConfigMap %s: %w", name, errLaunchSlow)
	case <-ctx.Done():
		return nil, fmt.Errorf("read ConfigMap %s: %w", name, ctx.Err())
	}
}

// read reads the snapshot of f, in the turn of the client address whose
// review asked for it, keeps what it found for the later pods, and ends f.
// It is bounded by its own deadline, not by the requests that wait on it: a
// read that outlives them still serves the pods after them.
func (r *launchReader) read(f *launchFlight, key, requester string, snapshot client.ObjectKey) {
	defer func() {
		r.mu.Lock()
		delete(r.flights, key)
		r.mu.Unlock()
		close(f.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	if err := r.reads.Acquire(ctx, requester, 1); err != nil {
		f.err = fmt.Errorf("wait to read ConfigMap %s: %w", snapshot.Name, err)
		return
	}
	defer r.reads.Release(1)
	var cm corev1.ConfigMap
	if err := r.api.Get(ctx, snapshot, &cm); err != nil {
		f.err = fmt.Errorf("read ConfigMap %s: %w", snapshot.Name, err)
		return
	}
	l, err := render.ReadLaunches([]byte(cm.Data[render.BundleKey]))
	if err != nil {
		f.err = fmt.Errorf("the %s of ConfigMap %s: %w", render.BundleKey, snapshot.Name, err)
		return
	}
	r.kept.Add(cm.UID, l)
	f.launches = l
}
