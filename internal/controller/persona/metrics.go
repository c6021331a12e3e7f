package persona

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

var (
	renderDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "persona_render_duration_seconds",
		Help:    "Time to resolve and render one Persona, every variant included; a failed resolve, or a status pass that reports the render a fan-out delivered, is not counted.",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
	})
	renderFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "persona_render_failures_total",
		Help: "Persona reconciles that did not render, by the reason of the Ready condition.",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(renderDuration, renderFailures)
}

var personasByReadyReason = prometheus.NewDesc("persona_personas_by_ready_reason",
	"Personas by the reason of their Ready condition (empty before their first reconcile).", []string{"reason"}, nil)

// readyReasons counts the cache's Personas by Ready reason. The counts
// follow the Persona informer's events, so that a scrape reads them without
// listing, and copying, every Persona in the cache; they cannot drift from
// the objects the cache holds, since the informer tells its handlers of
// every object it adds, changes and drops, the ones of its first list too.
type readyReasons struct {
	mu     sync.Mutex
	counts map[string]int
}

func newReadyReasons() *readyReasons { return &readyReasons{counts: map[string]int{}} }

// handler keeps the counts as the informer changes the cache.
func (c *readyReasons) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.move(nil, obj) },
		UpdateFunc: c.move,
		DeleteFunc: func(obj any) { c.move(obj, nil) },
	}
}

// move counts the change of one Persona from before to after: each a
// Persona, a tombstone of one, or nil where there is none.
func (c *readyReasons) move(before, after any) {
	from, wasThere := readyReasonOf(before)
	to, isThere := readyReasonOf(after)
	if wasThere == isThere && from == to {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if wasThere {
		if c.counts[from]--; c.counts[from] <= 0 {
			delete(c.counts, from)
		}
	}
	if isThere {
		c.counts[to]++
	}
}

// readyReasonOf is the reason of obj's Ready condition, empty when it has
// none; false when obj is no Persona.
func readyReasonOf(obj any) (string, bool) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	p, ok := obj.(*v1alpha1.Persona)
	if !ok || p == nil {
		return "", false
	}
	if ready := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition); ready != nil {
		return ready.Reason, true
	}
	return "", true
}

func (*readyReasons) Describe(ch chan<- *prometheus.Desc) { ch <- personasByReadyReason }

func (c *readyReasons) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for reason, n := range c.counts {
		ch <- prometheus.MustNewConstMetric(personasByReadyReason, prometheus.GaugeValue, float64(n), reason)
	}
}
