package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testReport is a report of n Personas over two rounds, as a run fills it.
func testReport(n int) *report {
	s := time.Second
	return &report{
		opts:         options{n: n, steady: 5 * s, workers: 16},
		machine:      "2 CPUs (test)",
		managerFlags: []string{"--leader-elect=false"},
		rounds: []*roundResult{
			{convergenceFloor: 10 * s, convergenceSpecFloor: 12 * s, fanOutFloor: 2 * s, fanOutSpecFloor: 4 * s,
				convergence: 12 * s, convergenceCreates: 9 * s, fanOut: 3 * s, fanOutStatuses: 5 * s, clusterFanOut: 4 * s, clusterFanOutStatuses: 6 * s},
			{convergenceFloor: 10 * s, convergenceSpecFloor: 12 * s, fanOutFloor: 2 * s, fanOutSpecFloor: 4 * s,
				convergence: 14 * s, convergenceCreates: 9 * s, fanOut: 3 * s, fanOutStatuses: 7 * s, clusterFanOut: 4 * s, clusterFanOutStatuses: 6 * s},
		},
		peakRSS:      int64(n)<<10 + 50<<20, // 1 KiB per Persona over a baseline of 50 MiB
		baselineRSS:  50 << 20,
		steadyWrites: map[string]float64{"GET": 4},
		webhookOn:    latencies{2 * time.Millisecond, 3 * time.Millisecond},
		webhookOff:   latencies{time.Millisecond, 2 * time.Millisecond},
	}
}

// -json's output decodes into its types, with no key they lack, and
// carries the figures the comparison of versions needs.
func TestJSONDecodesIntoItsTypes(t *testing.T) {
	small, large := testReport(10), testReport(40)
	large.rounds[1].clusterFanOutTimeout = "ClusterPromptLayer fan-out: timed out"
	path := filepath.Join(t.TempDir(), "scale.json")
	started := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := writeJSON(path, started, small, figuresOf([]*report{small, large})); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var got runJSON
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode: %v\n%s", err, raw)
	}
	if got.N != 40 || got.Rounds != 2 || len(got.Curve) != 2 || got.Curve[0].N != 10 || !got.Timestamp.Equal(started) || got.Machine != "2 CPUs (test)" {
		t.Errorf("n %d, rounds %d, curve %d points, timestamp %s, machine %q", got.N, got.Rounds, len(got.Curve), got.Timestamp, got.Machine)
	}
	// Ratios are the medians of the rounds' ratios: fan-out 3/2 and 3/2;
	// until every status is current 5/4 and 7/4.
	for name, c := range map[string]struct {
		got  *float64
		want float64
	}{
		"fanout_ratio":              {got.FanOutRatio, 1.5},
		"fanout_status_ratio":       {got.FanOutStatusRatio, 1.5},
		"convergence_ratio":         {got.ConvergenceRatio, 1.3},
		"fanout_least_ratio":        {got.FanOutLeastRatio, 2},
		"fanout_per_persona_s":      {got.FanOutPerPersonaS, 3.0 / 40},
		"curve[0].fanout_status_s":  {got.Curve[0].FanOutStatusS, 6},
		"curve[0].cluster_fanout_s": {got.Curve[0].ClusterFanOutS, 4},
	} {
		if c.got == nil || math.Abs(*c.got-c.want) > 1e-9 {
			t.Errorf("%s = %s, want %v", name, show(c.got), c.want)
		}
	}
	if got.ClusterFanOutRatio != nil || len(got.Timeouts) != 1 {
		t.Errorf("a round timed out: cluster_fanout_ratio = %s, timeouts %q", show(got.ClusterFanOutRatio), got.Timeouts)
	}
	if got.RSSPerPersonaBytes != 1024 || got.SteadyWrites != 0 || got.WebhookOnP99S != 0.003 {
		t.Errorf("rss per persona %v, steady writes %v, webhook p99 %v", got.RSSPerPersonaBytes, got.SteadyWrites, got.WebhookOnP99S)
	}
	if got.Growth == nil || got.Growth.RSSPerPersonaGrowth == nil || *got.Growth.RSSPerPersonaGrowth != 1 || !got.Growth.SteadyWritesZeroAtEveryN {
		t.Errorf("growth = %+v", got.Growth)
	}

	// A figure not measured is null, not missing: every version has every key.
	var keys map[string]any
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"timestamp", "machine", "n", "rounds", "curve", "growth", "fanout_ratio", "fanout_status_ratio", "convergence_ratio",
		"cluster_fanout_ratio", "convergence_floor_s", "fanout_floor_s", "fanout_status_floor_s", "peak_rss_bytes", "renders", "render_p99_s",
		"steady_writes", "webhook_on_p50_s", "webhook_on_p99_s"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("no key %q", k)
		}
	}
}

func show(x *float64) string {
	if x == nil {
		return "null"
	}
	return fmt.Sprint(*x)
}

func TestCurveMarkdown(t *testing.T) {
	small, large := testReport(100), testReport(1000)
	large.rounds[0].convergence, large.rounds[1].convergence = 200*time.Second, 200*time.Second // 0.2 s per Persona, from 0.13
	large.peakRSS = 400 << 20
	large.steadyWrites = map[string]float64{"PATCH": 2}
	table := curveMarkdown(figuresOf([]*report{small, large}))
	// Columns are padded to their widest cell: compare with single spaces.
	flat := strings.Join(strings.Fields(table), " ")
	for _, want := range []string{
		"the curve over N=100, 1000",
		"| 100 | 130.00 ms | 30.00 ms | 50 MiB | 1.0 KiB | 0 |",
		"| convergence time per Persona | 130.00 ms | 200.00 ms | 1.54× | ≤ 1.2× | **no** |",
		"| fan-out time per Persona | 30.00 ms | 3.00 ms | 0.10× | ≤ 1.2× | yes |",
		"| RSS per Persona | 1.0 KiB | 358.4 KiB | 358.40× | ≤ 1.2× | **no** |",
		"| manager peak RSS | 50 MiB | 400 MiB | — | ≤ 300 MiB at N=1000 | **no** |",
		"| steady-state writes | 0 | 2 | — | 0 at every N | **no** |",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the curve lacks %q:\n%s", want, table)
		}
	}
	if one := curveMarkdown(figuresOf([]*report{small})); !strings.Contains(one, "growth: needs two Ns") {
		t.Errorf("one N:\n%s", one)
	}
}

func TestSizesFlag(t *testing.T) {
	var s sizes
	if err := s.Set("2000, 500,500"); err != nil || s.String() != "500,2000" {
		t.Errorf("Set = %v, %q; want 500,2000", err, s.String())
	}
	if err := s.Set("500,0"); err == nil {
		t.Error("0 Personas accepted")
	}
}
