package persona

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// backgroundPrunes finish the prunes that reconciles begin, off the
// workers. A prune waits for a list of its Persona's pods made afresh
// before it deletes a snapshot (revisions.Store.FinishPrune; the prunes of
// a namespace share one), and the API server answers that list once its
// cache of pods is as new as etcd: in a namespace whose pods do not
// change, that takes a progress notification from etcd, which the API
// server asks for every 100 ms while a read waits. A worker that
// waited for it held none of its requests in flight meanwhile: in a
// fan-out at N = 2,000 the two cores were 88–97 % busy (its floor 99 %),
// and 97–98 % without the list.
//
// A Persona's prunes run one at a time, in the order their reconciles
// began them; at most limit run at once (prunesPerWorker for each
// worker), and a reconcile that finds them all taken waits for one.
type backgroundPrunes struct {
	slots chan struct{}

	mu sync.Mutex
	// last is the prune of each Persona begun last, closed when it ends.
	last    map[types.NamespacedName]chan struct{}
	running sync.WaitGroup
}

// pruneTimeout bounds a prune in the background: its reconcile's context
// ends with the reconcile.
const pruneTimeout = time.Minute

// prunesPerWorker is how many prunes may run for each worker. A prune
// mostly waits for its namespace's shared list of pods (up to two lists'
// time, about 100 ms each), longer than a reconcile of a fan-out takes
// (about 80 ms at N = 2,000): with one place per worker, the workers
// waited for places and left the cores a sixth idle. What the waiting
// prunes ask of the API server is one list per namespace at a time.
const prunesPerWorker = 4

func newBackgroundPrunes(limit int) *backgroundPrunes {
	return &backgroundPrunes{slots: make(chan struct{}, max(limit, 1)), last: map[types.NamespacedName]chan struct{}{}}
}

// start runs prune for persona in the background once its prune before
// has ended, and calls failed with its error. ctx's values (the logger)
// carry over, its end does not.
func (b *backgroundPrunes) start(ctx context.Context, persona types.NamespacedName, prune func(context.Context) error, failed func(error)) {
	b.slots <- struct{}{}
	done := make(chan struct{})
	b.mu.Lock()
	before := b.last[persona]
	b.last[persona] = done
	b.mu.Unlock()
	b.running.Add(1)
	go func() {
		defer b.running.Done()
		defer func() { <-b.slots }()
		defer b.ended(persona, done)
		if before != nil {
			<-before
		}
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pruneTimeout)
		defer cancel()
		if err := prune(pctx); err != nil {
			failed(err)
		}
	}()
}

// ended closes done and forgets it, unless a later prune of persona has
// begun: that one waits for done.
func (b *backgroundPrunes) ended(persona types.NamespacedName, done chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(done)
	if b.last[persona] == done {
		delete(b.last, persona)
	}
}

// wait waits until every prune begun has ended.
func (b *backgroundPrunes) wait() { b.running.Wait() }
