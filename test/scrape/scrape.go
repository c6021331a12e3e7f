// Package scrape reads a Prometheus text endpoint, such as the manager's
// metrics, into flat series that tests and the scale harness sum and
// compare between two scrapes.
package scrape

import (
	"context"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a Prometheus text exposition.
type Sample struct {
	name   string
	labels map[string]string
	value  float64
}

// Snapshot is one scrape of an endpoint.
type Snapshot []Sample

// Get scrapes the endpoint at url.
func Get(ctx context.Context, url string) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := Open(ctx, http.DefaultClient, url)
	if err != nil {
		return nil, fmt.Errorf("scrape the metrics: %w", err)
	}
	defer body.Close()
	return Parse(body)
}

// Open GETs url with c and returns the body of its 200 response; any other
// status is an error. The caller closes the body.
func Open(ctx context.Context, c *http.Client, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// Parse reads the text exposition format (what the endpoint serves
// without content negotiation) into flat series; a histogram becomes its
// _bucket (with le), _sum and _count series.
func Parse(r io.Reader) (Snapshot, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var out Snapshot
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			add := func(suffix string, extra map[string]string, v float64) {
				ls := labels
				if extra != nil {
					ls = maps.Clone(labels)
					maps.Copy(ls, extra)
				}
				out = append(out, Sample{name: name + suffix, labels: ls, value: v})
			}
			switch {
			case m.Counter != nil:
				add("", nil, m.GetCounter().GetValue())
			case m.Gauge != nil:
				add("", nil, m.GetGauge().GetValue())
			case m.Untyped != nil:
				add("", nil, m.GetUntyped().GetValue())
			case m.Histogram != nil:
				h := m.GetHistogram()
				sawInf := false
				for _, b := range h.GetBucket() {
					sawInf = sawInf || math.IsInf(b.GetUpperBound(), 1)
					add("_bucket", map[string]string{"le": strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)}, float64(b.GetCumulativeCount()))
				}
				if !sawInf {
					add("_bucket", map[string]string{"le": "+Inf"}, float64(h.GetSampleCount()))
				}
				add("_sum", nil, h.GetSampleSum())
				add("_count", nil, float64(h.GetSampleCount()))
			}
		}
	}
	return out, nil
}

// Sum adds the series of name whose labels match every key=value of match.
func (s Snapshot) Sum(name string, match map[string]string) float64 {
	var total float64
	for x := range s.matching(name, match) {
		total += x.value
	}
	return total
}

// Has reports whether any series of name has labels matching every
// key=value of match.
func (s Snapshot) Has(name string, match map[string]string) bool {
	for range s.matching(name, match) {
		return true
	}
	return false
}

// matching yields the series of name whose labels match every key=value
// of match.
func (s Snapshot) matching(name string, match map[string]string) iter.Seq[Sample] {
	return func(yield func(Sample) bool) {
		for _, x := range s {
			if x.name == name && matches(x.labels, match) && !yield(x) {
				return
			}
		}
	}
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// WriteMethods are the HTTP methods that write.
var WriteMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

// Requests sums client-go's rest_client_requests_total by method, but the
// control plane checks' dry-run creates (persona_webhook_control_plane_checks_total),
// which store nothing.
func (s Snapshot) Requests() map[string]float64 {
	out := s.SumBy("rest_client_requests_total", "method", nil)
	if checks := s.Sum("persona_webhook_control_plane_checks_total", nil); checks != 0 {
		out["POST"] -= checks
	}
	return out
}

// SumBy adds the series of name whose labels match every key=value of
// match, by the value of their label.
func (s Snapshot) SumBy(name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	for x := range s.matching(name, match) {
		out[x.labels[label]] += x.value
	}
	return out
}

// Writes is the API write requests client-go made.
func (s Snapshot) Writes() float64 {
	r := s.Requests()
	var total float64
	for _, m := range WriteMethods {
		total += r[m]
	}
	return total
}

// Histogram is a Prometheus histogram: cumulative bucket counts by upper bound.
type Histogram struct {
	bounds []float64
	counts []float64 // cumulative
	// Count and Sum are the _count and _sum series.
	Count float64
	Sum   float64
}

// Histogram collects the histogram name from the series whose labels match.
func (s Snapshot) Histogram(name string, match map[string]string) Histogram {
	byBound := map[float64]float64{}
	var h Histogram
	for _, x := range s {
		if !matches(x.labels, match) {
			continue
		}
		switch x.name {
		case name + "_bucket":
			le, err := strconv.ParseFloat(x.labels["le"], 64)
			if err == nil {
				byBound[le] += x.value
			}
		case name + "_sum":
			h.Sum += x.value
		case name + "_count":
			h.Count += x.value
		}
	}
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// Minus is h - before, for a histogram over a window.
func (h Histogram) Minus(before Histogram) Histogram {
	out := Histogram{Count: h.Count - before.Count, Sum: h.Sum - before.Sum, bounds: h.bounds}
	for i, b := range h.bounds {
		c := h.counts[i]
		for j, bb := range before.bounds {
			if bb == b {
				c -= before.counts[j]
			}
		}
		out.counts = append(out.counts, c)
	}
	return out
}

// Quantile estimates the q-quantile the way PromQL's histogram_quantile
// does: linear interpolation inside the bucket it falls in.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	prevBound, prevCount := 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(b, 1) {
				return prevBound // above the highest finite bound
			}
			if h.counts[i] == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(h.counts[i]-prevCount)
		}
		prevBound, prevCount = b, h.counts[i]
	}
	return prevBound
}

// BucketOf is the upper bound of the bucket the q-quantile falls in.
func (h Histogram) BucketOf(q float64) float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	for i, b := range h.bounds {
		if h.counts[i] >= q*h.Count {
			return b
		}
	}
	return math.Inf(1)
}
