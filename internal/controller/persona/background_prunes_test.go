package persona

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/revisions"
)

// blockingPrune is a prune that has begun once began is closed and ends,
// with err, once release is closed.
type blockingPrune struct {
	began, release chan struct{}
	err            error
	// ctxErr is its context's error when it was released.
	ctxErr error
}

func newBlockingPrune(err error) *blockingPrune {
	return &blockingPrune{began: make(chan struct{}), release: make(chan struct{}), err: err}
}

func (p *blockingPrune) run(ctx context.Context) error {
	close(p.began)
	<-p.release
	p.ctxErr = ctx.Err()
	return p.err
}

func began(p *blockingPrune) bool {
	select {
	case <-p.began:
		return true
	case <-time.After(50 * time.Millisecond):
		return false
	}
}

func mustBegin(t *testing.T, p *blockingPrune, what string) {
	t.Helper()
	select {
	case <-p.began:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not begin", what)
	}
}

// A reconcile hands its prune over and goes on: the prune runs, past the
// reconcile's context, and its failure is reported.
func TestAPruneRunsPastItsReconcile(t *testing.T) {
	b := newBackgroundPrunes(4)
	ctx, cancel := context.WithCancel(context.Background())
	boom := errors.New("boom")
	p := newBlockingPrune(boom)
	failed := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		b.start(ctx, types.NamespacedName{Namespace: "ns", Name: "a"}, p.run, func(err error) { failed <- err })
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("start waited for the prune")
	}
	mustBegin(t, p, "the prune")
	cancel() // the reconcile has returned
	close(p.release)
	b.wait()
	if p.ctxErr != nil {
		t.Errorf("the prune's context ended with its reconcile's: %v", p.ctxErr)
	}
	select {
	case err := <-failed:
		if !errors.Is(err, boom) {
			t.Errorf("failed with %v, want %v", err, boom)
		}
	default:
		t.Error("the prune's failure was not reported")
	}
}

// A Persona's prunes run one after the other; another Persona's does not
// wait for them.
func TestAPersonasPrunesRunOneAtATime(t *testing.T) {
	b := newBackgroundPrunes(4)
	ctx := context.Background()
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	first, second, other := newBlockingPrune(nil), newBlockingPrune(nil), newBlockingPrune(nil)
	noFailure := func(err error) { t.Errorf("unexpected failure: %v", err) }
	b.start(ctx, a, first.run, noFailure)
	mustBegin(t, first, "the first prune of a")
	b.start(ctx, a, second.run, noFailure)
	b.start(ctx, types.NamespacedName{Namespace: "ns", Name: "b"}, other.run, noFailure)
	mustBegin(t, other, "the prune of b")
	if began(second) {
		t.Fatal("the second prune of a began before the first ended")
	}
	close(first.release)
	mustBegin(t, second, "the second prune of a")
	close(second.release)
	close(other.release)
	b.wait()
	if len(b.last) != 0 {
		t.Errorf("%d Personas' prunes are still remembered after all ended", len(b.last))
	}
}

// At most limit prunes run at once; the next reconcile waits for a place.
func TestPrunesAreBounded(t *testing.T) {
	b := newBackgroundPrunes(2)
	ctx := context.Background()
	noFailure := func(err error) { t.Errorf("unexpected failure: %v", err) }
	running := []*blockingPrune{newBlockingPrune(nil), newBlockingPrune(nil)}
	for i, p := range running {
		b.start(ctx, types.NamespacedName{Namespace: "ns", Name: string(rune('a' + i))}, p.run, noFailure)
		mustBegin(t, p, "a prune within the limit")
	}
	third := newBlockingPrune(nil)
	started := make(chan struct{})
	go func() {
		b.start(ctx, types.NamespacedName{Namespace: "ns", Name: "c"}, third.run, noFailure)
		close(started)
	}()
	select {
	case <-started:
		t.Fatal("a third prune started past the limit of 2")
	case <-time.After(50 * time.Millisecond):
	}
	close(running[0].release)
	<-started
	mustBegin(t, third, "the third prune, once a place was free")
	close(running[1].release)
	close(third.release)
	b.wait()
}

// failingPrunes is a revision store whose prunes find a snapshot past the
// limit and fail to delete it.
type failingPrunes struct {
	RevisionStore
	err error
}

func (s failingPrunes) BeginPrune(context.Context, *v1alpha1.Persona) (*revisions.Pruning, error) {
	return &revisions.Pruning{}, nil
}

func (s failingPrunes) FinishPrune(context.Context, *v1alpha1.Persona, *revisions.Pruning, *metav1.PartialObjectMetadata) error {
	return s.err
}

// A prune that fails in the background queues its Persona again, as a
// failed reconcile would be, so that the next reconcile prunes again.
func TestAFailedPruneQueuesItsPersonaAgain(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("prunes")
	defer q.ShutDown()
	r := &reconciler{revisions: failingPrunes{err: errors.New("the API server is away")}, prunes: newBackgroundPrunes(1)}
	r.queue.Store(&q)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}}
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	if err := r.prune(t.Context(), req, p, nil); err != nil {
		t.Fatalf("the reconcile's prune: %v, want none (it fails in the background)", err)
	}
	r.prunes.wait()
	deadline := time.Now().Add(5 * time.Second)
	for q.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the Persona whose prune failed was not queued again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, _ := q.Get(); got != req {
		t.Errorf("queued %v, want %v", got, req)
	}
}
