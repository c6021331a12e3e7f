package persona

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// readyReasons counts the cache's Personas by Ready reason at each scrape,
// so the figure cannot drift from the objects it counts.
type readyReasons struct{ cache client.Reader }

func (readyReasons) Describe(ch chan<- *prometheus.Desc) { ch <- personasByReadyReason }

func (c readyReasons) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list v1alpha1.PersonaList
	if err := c.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.Log.WithName("metrics").Error(err, "count Personas by Ready reason")
		return
	}
	counts := map[string]int{}
	for i := range list.Items {
		reason := ""
		if ready := meta.FindStatusCondition(list.Items[i].Status.Conditions, v1alpha1.ReadyCondition); ready != nil {
			reason = ready.Reason
		}
		counts[reason]++
	}
	for reason, n := range counts {
		ch <- prometheus.MustNewConstMetric(personasByReadyReason, prometheus.GaugeValue, float64(n), reason)
	}
}
