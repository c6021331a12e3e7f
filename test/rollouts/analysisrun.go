package rollouts

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/release"
)

// WaitCompleted polls the AnalysisRun name of namespace until its phase is
// one that completes a run, and returns it.
func WaitCompleted(ctx context.Context, c client.Client, namespace, name string, timeout time.Duration) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	phase := ""
	for {
		run := &unstructured.Unstructured{}
		run.SetGroupVersionKind(release.AnalysisRunKind)
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, run)
		if err == nil {
			if phase = string(release.RunPhase(run)); release.AnalysisPhase(phase).Completed() {
				return run, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("AnalysisRun %s/%s not completed within %s (phase %q, last error %v): %w", namespace, name, timeout, phase, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// Measurements are the values the metric name of an AnalysisRun measured, in
// order.
func Measurements(run *unstructured.Unstructured, metric string) []string {
	results, _, _ := unstructured.NestedSlice(run.Object, "status", "metricResults")
	var values []string
	for _, r := range results {
		result, _ := r.(map[string]any)
		if result["name"] != metric {
			continue
		}
		measurements, _ := result["measurements"].([]any)
		for _, m := range measurements {
			measurement, _ := m.(map[string]any)
			v, _ := measurement["value"].(string)
			values = append(values, v)
		}
	}
	return values
}
