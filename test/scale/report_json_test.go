package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
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
			{floors: floorsOnce(),
				convergence: 12 * s, convergenceCreates: 9 * s, fanOut: fanOutResult{configMaps: 3 * s, statuses: 5 * s}, clusterFanOut: fanOutResult{configMaps: 4 * s, statuses: 6 * s}},
			{floors: floorsOnce(),
				convergence: 14 * s, convergenceCreates: 9 * s, fanOut: fanOutResult{configMaps: 3 * s, statuses: 7 * s}, clusterFanOut: fanOutResult{configMaps: 4 * s, statuses: 6 * s}},
		},
		peakRSS:      int64(n)<<10 + 50<<20, // 1 KiB per Persona over a baseline of 50 MiB
		baselineRSS:  50 << 20,
		steadyWrites: map[string]float64{"GET": 4},
		webhookOn:    latencies{2 * time.Millisecond, 3 * time.Millisecond},
		webhookOff:   latencies{time.Millisecond, 2 * time.Millisecond},
		injectOn:     latencies{3 * time.Millisecond, 4 * time.Millisecond},
		injectCanary: latencies{3 * time.Millisecond, 5 * time.Millisecond},
		injectOff:    latencies{2 * time.Millisecond, 3 * time.Millisecond},

		injectLiveHeapGrowth: 6 << 20,
		injectRSSGrowth:      11 << 20,
	}
}

// floorsOnce are a round's floors, measured before its phases only,
// without the one with the last fan-out's history (a run before it).
func floorsOnce() roundFloors {
	return roundFloors{convergence: measuredOnce(10 * time.Second), convergenceSpec: measuredOnce(12 * time.Second),
		fanOut: measuredOnce(2 * time.Second), fanOutSpec: measuredOnce(4 * time.Second)}
}

// Each fan-out stands beside fan-out's floors interpolated to its own
// middle: a later fan-out, on the API server's larger heap, beside a
// slower floor.
func TestFanOutsStandBesideTheirOwnFloors(t *testing.T) {
	s := time.Second
	t0 := time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC)
	r := testReport(10)
	rr := r.rounds[0]
	// The bare fan-out floor took 2 s before the phases and 4 s after,
	// their middles 100 s apart; the with-status one 4 s and 8 s.
	rr.floors.fanOut = bracket{before: timed{took: 2 * s, mid: t0}, after: timed{took: 4 * s, mid: t0.Add(100 * s)}}
	rr.floors.fanOutSpec = bracket{before: timed{took: 4 * s, mid: t0}, after: timed{took: 8 * s, mid: t0.Add(100 * s)}}
	// The PromptLayer fan-out's ConfigMaps took 4 s from t0+23 s: middle at
	// 25 s, a quarter of the way, floor 2.5 s. The parent's took 6 s from
	// t0+72 s: middle at 75 s, floor 3.5 s. Its statuses took 10 s from
	// there: middle at 77 s, with-status floor 4 + 4×0.77 = 7.08 s.
	rr.fanOut.start, rr.fanOut.configMaps = t0.Add(23*s), 4*s
	rr.parentFanOut.start, rr.parentFanOut.configMaps, rr.parentFanOut.statuses = t0.Add(72*s), 6*s, 10*s
	// The PromptPlatform's edit took 4 s from t0+90 s: middle at 92 s,
	// floor 2 + 2×0.92 = 3.84 s. Its statuses took 8 s: middle at 94 s,
	// with-status floor 4 + 4×0.94 = 7.76 s.
	rr.platformEdit = fanOutResult{start: t0.Add(90 * s), configMaps: 4 * s, statuses: 8 * s}
	r.rounds = r.rounds[:1]
	f := r.figures()
	for name, c := range map[string]struct {
		got  *float64
		want float64
	}{
		"fanout_ratio":                   {f.FanOutRatio, 4 / 2.5},
		"parent_fanout_ratio":            {f.ParentFanOutRatio, 6 / 3.5},
		"parent_fanout_status_ratio":     {f.ParentFanOutStatusRatio, 10 / 7.08},
		"fanout_floor_s":                 {&f.FanOutFloorS, 2.5},
		"parent_fanout_floor_s":          {&f.ParentFanOutFloorS, 3.5},
		"floors_before.fanout_s":         {&f.FloorsBefore.FanOutS, 2},
		"floors_after.fanout_s":          {&f.FloorsAfter.FanOutS, 4},
		"platform_fanout_ratio":          {f.PlatformFanOutRatio, 4 / 3.84},
		"platform_fanout_status_ratio":   {f.PlatformFanOutStatusRatio, 8 / 7.76},
		"platform_fanout_floor_s":        {&f.PlatformFanOutFloorS, 3.84},
		"platform_fanout_status_floor_s": {&f.PlatformFanOutStatusFloorS, 7.76},
	} {
		if c.got == nil || math.Abs(*c.got-c.want) > 1e-9 {
			t.Errorf("%s = %s, want %v", name, show(c.got), c.want)
		}
	}
	if f.PlatformCreateFanOutS != nil || f.PlatformCreateFanOutRatio != nil {
		t.Errorf("the PromptPlatform's create did not run: platform_create_fanout_s = %s, ratio %s; want null", show(f.PlatformCreateFanOutS), show(f.PlatformCreateFanOutRatio))
	}
	row := r.roundRows()[1]
	if row[3] != "2.00 → 4.00 s" || row[len(row)-4] != "1.71×" || row[len(row)-2] != "1.04×" || row[len(row)-1] != "—" {
		t.Errorf("the round's row: fan-out floor %q, parent ratio %q, PromptPlatform ratio %q, floors beside the fan-outs %q; want 2.00 → 4.00 s, 1.71×, 1.04× and —",
			row[3], row[len(row)-4], row[len(row)-2], row[len(row)-1])
	}
	if f.FanOutAdjacentRatio != nil || f.FanOutAdjacentFloorS != 0 || len(f.AdjacentFloorsS) != 0 {
		t.Errorf("no floor was measured beside the fan-outs: fanout_adjacent_ratio %s, fanout_adjacent_floor_s %v, adjacent_floors_s %v; want null, 0 and []",
			show(f.FanOutAdjacentRatio), f.FanOutAdjacentFloorS, f.AdjacentFloorsS)
	}
}

// Each fan-out also stands beside the bare floors measured just before it
// and just after it, interpolated to its middle: not the neighbours of
// another fan-out.
func TestFanOutsStandBesideTheirAdjacentFloors(t *testing.T) {
	s := time.Second
	t0 := time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC)
	r := testReport(10)
	r.rounds = r.rounds[:1]
	rr := r.rounds[0]
	// Adjacent floor k measured at t0 + 20k s, taking 2 + k s: 2 s before
	// the PromptLayer fan-out, 3 s after it (before the ClusterPromptLayer's),
	// 4 s after that, and so on to 8 s after the PromptPlatform's delete.
	for k := range rr.floors.adjacent {
		rr.floors.adjacent[k] = timed{took: time.Duration(2+k) * s, mid: t0.Add(time.Duration(20*k) * s)}
	}
	// The PromptLayer fan-out's ConfigMaps took 4 s from t0+3 s: middle at
	// 5 s, a quarter of the way from 2 s to 3 s, floor 2.25 s. The
	// ClusterPromptLayer's took 6 s from t0+27 s: middle at 30 s, half way
	// from 3 s to 4 s, floor 3.5 s. The PromptPlatform's delete, the sixth,
	// took 9 s from t0+100 s: middle at 104.5 s, 4.5 s of the 20 s from
	// its floor before (7 s at t0+100 s) to its floor after (8 s at
	// t0+120 s), floor 7.225 s.
	rr.fanOut.start, rr.fanOut.configMaps = t0.Add(3*s), 4*s
	rr.clusterFanOut.start, rr.clusterFanOut.configMaps = t0.Add(27*s), 6*s
	rr.platformDelete = fanOutResult{start: t0.Add(100 * s), configMaps: 9 * s, statuses: 10 * s}
	f := r.figures()
	for name, c := range map[string]struct {
		got  *float64
		want float64
	}{
		"fanout_adjacent_floor_s":                 {&f.FanOutAdjacentFloorS, 2.25},
		"fanout_adjacent_ratio":                   {f.FanOutAdjacentRatio, 4 / 2.25},
		"cluster_fanout_adjacent_floor_s":         {&f.ClusterFanOutAdjacentFloorS, 3.5},
		"cluster_fanout_adjacent_ratio":           {f.ClusterFanOutAdjacentRatio, 6 / 3.5},
		"platform_delete_fanout_adjacent_floor_s": {&f.PlatformDeleteFanOutAdjacentFloorS, 7.225},
		"platform_delete_fanout_adjacent_ratio":   {f.PlatformDeleteFanOutAdjacentRatio, 9 / 7.225},
	} {
		if c.got == nil || math.Abs(*c.got-c.want) > 1e-9 {
			t.Errorf("%s = %s, want %v", name, show(c.got), c.want)
		}
	}
	if want := []float64{2, 3, 4, 5, 6, 7, 8}; !slices.Equal(f.AdjacentFloorsS, want) {
		t.Errorf("adjacent_floors_s = %v, want %v", f.AdjacentFloorsS, want)
	}
	if row := r.roundRows()[1]; row[len(row)-1] != "2.00, 3.00, 4.00, 5.00, 6.00, 7.00, 8.00" {
		t.Errorf("the round's floors beside the fan-outs: %q", row[len(row)-1])
	}
}

// -json's output decodes into its types, with no key they lack, and
// carries the figures the comparison of versions needs.
func TestJSONDecodesIntoItsTypes(t *testing.T) {
	small, large := testReport(10), testReport(40)
	large.rounds[1].clusterFanOut.timeout = "ClusterPromptLayer fan-out: timed out"
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
	if got.InjectCanarySamples != 2 || got.InjectCanaryP50S != 0.003 || got.InjectCanaryP99S != 0.005 || got.InjectOffP50S != 0.002 {
		t.Errorf("canary samples %d, p50 %v, p99 %v; injection off p50 %v", got.InjectCanarySamples, got.InjectCanaryP50S, got.InjectCanaryP99S, got.InjectOffP50S)
	}
	if got.InjectLiveHeapGrowthBytes != 6<<20 || got.InjectRSSGrowthBytes != 11<<20 {
		t.Errorf("growth with the labelled pods: live heap %d, RSS %d", got.InjectLiveHeapGrowthBytes, got.InjectRSSGrowthBytes)
	}
	if got.Growth == nil || got.Growth.RSSPerPersonaGrowth == nil || *got.Growth.RSSPerPersonaGrowth != 1 || !got.Growth.SteadyWritesZeroAtEveryN {
		t.Errorf("growth = %+v", got.Growth)
	}

	// A figure not measured is null, not missing: every version has every key.
	var keys map[string]any
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"timestamp", "machine", "apiserver_consistency_checks", "n", "rounds", "curve", "growth", "fanout_ratio", "fanout_status_ratio", "convergence_ratio",
		"cluster_fanout_ratio", "convergence_floor_s", "fanout_floor_s", "fanout_status_floor_s", "parent_fanout_floor_s", "parent_fanout_status_floor_s", "floors_before", "floors_after", "peak_rss_bytes", "renders", "render_p99_s",
		"steady_writes", "webhook_on_p50_s", "webhook_on_p99_s", "inject_on_p50_s", "inject_on_p99_s", "inject_canary_p50_s", "inject_canary_p99_s",
		"inject_off_p50_s", "inject_off_p99_s", "inject_live_heap_growth_bytes", "inject_rss_growth_bytes",
		"platform_fanout_s", "platform_fanout_ratio", "platform_fanout_status_ratio", "platform_fanout_floor_s", "platform_create_fanout_ratio", "platform_delete_fanout_ratio"} {
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
	// The large N's fan-out floor took 2 s before the phases and 40 s after
	// them; its fan-out stands beside the floor of its own moment, but the
	// growth row gives the floors before the phases at each N: 20 ms per
	// Persona at 100 (2 s, floorsOnce), 2 ms at 1000.
	t0 := time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC)
	for _, rr := range large.rounds {
		rr.floors.fanOut = bracket{before: timed{took: 2 * time.Second, mid: t0}, after: timed{took: 40 * time.Second, mid: t0.Add(100 * time.Second)}}
		rr.fanOut.start = t0.Add(50 * time.Second)
	}
	table := curveMarkdown(figuresOf([]*report{small, large}))
	// Columns are padded to their widest cell: compare with single spaces.
	flat := strings.Join(strings.Fields(table), " ")
	for _, want := range []string{
		"the curve over N=100, 1000",
		"| 100 | 130.00 ms | 30.00 ms | 50 MiB | 1.0 KiB | 0 |",
		"| convergence time per Persona | 130.00 ms | 200.00 ms | 1.54× | ≤ 1.2× | **no** |",
		"| fan-out time per Persona | 30.00 ms | 3.00 ms | 0.10× | ≤ 1.2× | yes |",
		"| the API server's own: the fan-out floor before the phases, per Persona | 20.00 ms | 2.00 ms | 0.10× | — | — |",
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

// A round that timed out measured no floors after its phases: the medians
// of the floors after are over the rounds that did.
func TestFloorsAfterSkipRoundsThatMeasuredNone(t *testing.T) {
	s := time.Second
	measured := roundFloors{fanOut: bracket{before: timed{took: 2 * s}, after: timed{took: 4 * s}}}
	rounds := []*roundResult{{floors: measured}, {floors: roundFloors{fanOut: measuredOnce(2 * s)}}}
	if got := floorsJSONOf(rounds, func(b bracket) time.Duration { return b.after.took }).FanOutS; got != 4 {
		t.Errorf("floors_after.fanout_s = %v, want 4 (the one round that measured it)", got)
	}
	if got := floorsJSONOf(rounds, func(b bracket) time.Duration { return b.before.took }).FanOutS; got != 2 {
		t.Errorf("floors_before.fanout_s = %v, want 2", got)
	}
}
