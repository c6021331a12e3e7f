package persona

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/persona-operator/persona-operator/internal/fairshare"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/status"
)

// contended renders out of wall time whenever another render runs beside
// it, as a render near its limit does on a machine it shares; the first
// render of each bundle waits until every one of them runs, so that they
// meet in the pool.
type contended struct {
	running atomic.Int32
	meet    sync.WaitGroup
	mu      sync.Mutex
	first   map[*render.Bundle]bool
	alone   atomic.Int32
}

func newContended(n int) *contended {
	c := &contended{first: map[*render.Bundle]bool{}}
	c.meet.Add(n)
	return c
}

func (c *contended) render(b *render.Bundle, _ time.Time) (*render.Output, error) {
	c.running.Add(1)
	defer c.running.Add(-1)
	c.mu.Lock()
	first := !c.first[b]
	c.first[b] = true
	c.mu.Unlock()
	if first {
		c.meet.Done()
		c.meet.Wait()
	} else {
		time.Sleep(10 * time.Millisecond)
	}
	if c.running.Load() > 1 {
		return nil, &render.LimitError{Limit: render.LimitTime}
	}
	c.alone.Add(1)
	return &render.Output{Hash: "sha256:ok"}, nil
}

// Two renders that overrun together in the pool are each retried alone,
// and render in time there.
func TestARenderOutOfTimeInThePoolIsRetriedAlone(t *testing.T) {
	r := newReconciler(nil, nil, nil, nil, nil, nil, nil, options{Gate: fairshare.NewGate(2, 16)})
	c := newContended(2)
	r.renderConfigMap = c.render
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, ns := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			place, ok := r.gate.Enter(ns)
			if !ok {
				t.Errorf("no place for %s", ns)
				return
			}
			defer place.Leave()
			_, errs[i] = r.renderTimed(withPlace(context.Background(), place), &render.Bundle{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("render %d: %v, want it rendered alone", i, err)
		}
	}
	if n := c.alone.Load(); n != 2 {
		t.Errorf("%d renders ran alone, want 2", n)
	}
}

// A render that overruns alone too is out of time: the overruns rule
// counts it.
func TestARenderOutOfTimeAloneIsOutOfTime(t *testing.T) {
	r := newReconciler(nil, nil, nil, nil, nil, nil, nil, options{Gate: fairshare.NewGate(2, 16)})
	calls := 0
	r.renderConfigMap = func(*render.Bundle, time.Time) (*render.Output, error) {
		calls++
		return nil, &render.LimitError{Limit: render.LimitPersonaTime}
	}
	place, _ := r.gate.Enter("a")
	defer place.Leave()
	if _, err := r.renderTimed(withPlace(context.Background(), place), &render.Bundle{}); !status.OutOfTime(err) {
		t.Fatalf("render: %v, want out of time", err)
	}
	if calls != 2 {
		t.Fatalf("rendered %d times, want 2: in the pool, then alone", calls)
	}
}

func TestGuardrailsWaitUntilTheDeadline(t *testing.T) {
	g := newGuardrailsWaiting()
	p := objectKey("ns", "p")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if left := g.left(p, "g1", start, time.Minute); left != time.Minute {
		t.Fatalf("left %v, want the whole deadline", left)
	}
	if left := g.left(p, "g1", start.Add(40*time.Second), time.Minute); left != 20*time.Second {
		t.Fatalf("left %v, want 20s", left)
	}
	if left := g.left(p, "g1", start.Add(61*time.Second), time.Minute); left != 0 {
		t.Fatalf("left %v after the deadline, want 0", left)
	}
	if left := g.left(p, "g2", start.Add(61*time.Second), time.Minute); left != time.Minute {
		t.Fatalf("other guardrails: left %v, want the whole deadline again", left)
	}
	g.forgetPersona(p)
	if left := g.left(p, "g2", start.Add(200*time.Second), time.Minute); left != time.Minute {
		t.Fatalf("after a render: left %v, want the whole deadline again", left)
	}
}
