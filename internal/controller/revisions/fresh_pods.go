package revisions

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// freshPodLists list the pods that prunes must not take a snapshot from,
// afresh from the API server, one list for every Persona of a namespace
// whose prune waits. Each list is a consistent read, which the API server
// answers once its cache of pods is as new as etcd. With one list per
// Persona, a fan-out at N = 2,000 made 2,000 of them, each about 0.5 ms of
// the API server's CPU and 0.1 ms of etcd's; shared, its prunes make
// about 250, and a Persona's share of one costs about an eighth of that
// (BenchmarkFreshPodLists in test/scale).
//
// A prune joins the next list of its namespace, which starts once the one
// in flight, if any, has ended: a list a prune joins starts after the
// prune asked, so it holds every pod admitted before. The list selects
// the pods of the Personas that joined it, so it returns what their lists
// one by one would have; those in flight, and so those that join, are at
// most the prunes running at once.
type freshPodLists struct {
	pods client.Reader

	mu sync.Mutex
	// next is each namespace's list still gathering Personas; inFlight
	// the namespaces whose list runs.
	next     map[string]*podList
	inFlight map[string]bool
}

// podList is one list of a namespace's pods: the Personas it selects,
// and once done is closed, the revisions each one's pods name, or err.
// It runs with the values of the context of the prune that began it.
type podList struct {
	ctx      context.Context
	personas []string
	done     chan struct{}
	inUse    map[string]map[int64]bool
	err      error
}

// freshPodListTimeout bounds a list, which no one prune's context does:
// it serves them all.
const freshPodListTimeout = time.Minute

func newFreshPodLists(pods client.Reader) *freshPodLists {
	return &freshPodLists{pods: pods, next: map[string]*podList{}, inFlight: map[string]bool{}}
}

// revisionsInUse are the revisions the pods of persona name, from a list
// that starts after the call.
func (f *freshPodLists) revisionsInUse(ctx context.Context, namespace, persona string) (map[int64]bool, error) {
	f.mu.Lock()
	l := f.next[namespace]
	if l == nil {
		l = &podList{ctx: ctx, done: make(chan struct{})}
		f.next[namespace] = l
	}
	if !slices.Contains(l.personas, persona) {
		l.personas = append(l.personas, persona)
	}
	if !f.inFlight[namespace] {
		f.startLocked(namespace)
	}
	f.mu.Unlock()
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if l.err != nil {
		return nil, fmt.Errorf("the fresh list of the pods of persona %s: %w", persona, l.err)
	}
	return l.inUse[persona], nil
}

// startLocked runs namespace's next list; f.mu is held. The list's
// context has the values of the one it began with, not its end: it serves
// every prune that joined. It is not waited for at shutdown, and ends
// within freshPodListTimeout.
func (f *freshPodLists) startLocked(namespace string) {
	l := f.next[namespace]
	delete(f.next, namespace)
	f.inFlight[namespace] = true
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), freshPodListTimeout)
		defer cancel()
		l.inUse, l.err = listRevisionsInUse(ctx, f.pods, namespace, l.personas)
		f.mu.Lock()
		delete(f.inFlight, namespace)
		if f.next[namespace] != nil {
			f.startLocked(namespace)
		}
		f.mu.Unlock()
		close(l.done)
	}()
}
