package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// writeLoad is a client writing Personas through the webhook at a steady
// rate: creates of new ones and edits of those it made, as a GitOps tool
// syncing often would. Every request's latency and error is kept.
type writeLoad struct {
	c      client.Client
	prefix string
	stop   context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	latencies []time.Duration
	failures  []string
	names     []string
}

// startLoad writes perSecond Personas a second in namespace until stopped.
func startLoad(ctx context.Context, c client.Client, prefix string, perSecond int) *writeLoad {
	ctx, stop := context.WithCancel(ctx)
	l := &writeLoad{c: c, prefix: prefix, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			l.write(ctx, n)
		}
	}()
	return l
}

// write creates a Persona on even turns and edits the last one created on
// odd ones.
func (l *writeLoad) write(ctx context.Context, n int) {
	started := time.Now()
	var err error
	if n%2 == 0 || len(l.names) == 0 {
		name := fmt.Sprintf("%s-%d", l.prefix, n)
		p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		p.Spec.Prompt = fmt.Sprintf("Load persona %d.\n", n)
		if err = l.c.Create(ctx, p); err == nil {
			l.mu.Lock()
			l.names = append(l.names, name)
			l.mu.Unlock()
		}
	} else {
		key := client.ObjectKey{Namespace: namespace, Name: l.names[len(l.names)-1]}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var p v1alpha1.Persona
			if err := l.c.Get(ctx, key, &p); err != nil {
				return err
			}
			p.Spec.Prompt = fmt.Sprintf("Load persona edited at %d.\n", n)
			return l.c.Update(ctx, &p)
		})
	}
	if ctx.Err() != nil {
		return // stopped mid-request: not the server's failure
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latencies = append(l.latencies, time.Since(started))
	if err != nil {
		l.failures = append(l.failures, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
	}
}

// finish stops the load and waits for its last request.
func (l *writeLoad) finish() {
	l.stop()
	<-l.done
}

// summary is the request count and latency percentiles.
func (l *writeLoad) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d requests, %d failed; latency p50 %s, p99 %s, max %s",
		len(l.latencies), len(l.failures), percentile(l.latencies, 50), percentile(l.latencies, 99), percentile(l.latencies, 100))
}
