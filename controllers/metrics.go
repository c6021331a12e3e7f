package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	renderDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "persona_render_duration_seconds",
		Help:    "Time to resolve and render one Persona, every variant included.",
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
