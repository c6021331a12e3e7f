package scrape

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	in := `# HELP persona_render_duration_seconds Time to render.
# TYPE persona_render_duration_seconds histogram
persona_render_duration_seconds_bucket{le="0.001"} 3
persona_render_duration_seconds_bucket{le="0.01"} 5
persona_render_duration_seconds_bucket{le="+Inf"} 6
persona_render_duration_seconds_sum 0.5
persona_render_duration_seconds_count 6
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="201",host="x",method="POST"} 7
rest_client_requests_total{code="200",host="x",method="GET"} 100
rest_client_requests_total{code="200",host="x",method="PATCH"} 2
# TYPE persona_webhook_control_plane_checks_total counter
persona_webhook_control_plane_checks_total 3
`
	s, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Writes(); got != 6 {
		t.Errorf("writes %v, want 6 (POST 7 of which 3 dry-run checks + PATCH 2)", got)
	}
	if got, want := s.SumBy("rest_client_requests_total", "method", map[string]string{"host": "x"}), map[string]float64{"POST": 7, "GET": 100, "PATCH": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("requests by method %v, want %v", got, want)
	}
	h := s.Histogram("persona_render_duration_seconds", nil)
	if !reflect.DeepEqual(h.bounds, []float64{0.001, 0.01, math.Inf(1)}) || !reflect.DeepEqual(h.counts, []float64{3, 5, 6}) || h.Count != 6 || h.Sum != 0.5 {
		t.Errorf("histogram %+v", h)
	}
}
