package main

import (
	"reflect"
	"testing"
	"time"
)

func TestRatioRow(t *testing.T) {
	rounds := []*roundResult{
		{convergence: 12 * time.Second, floors: roundFloors{convergence: measuredOnce(10 * time.Second)}},
		{convergence: 30 * time.Second, floors: roundFloors{convergence: measuredOnce(10 * time.Second)}},
		{convergence: 16 * time.Second, floors: roundFloors{convergence: measuredOnce(8 * time.Second)}},
	}
	op := func(rr *roundResult) time.Duration { return rr.convergence }
	floor := convergenceFloorOf
	none := func(*roundResult) string { return "" }
	// Ratios 1.2, 3.0 and 2.0: the median ratio is 2.00, not the ratio of
	// the medians (16 s / 10 s).
	got := ratioRow("m", rounds, op, floor, none, 1.5)
	want := []string{"m", "16.00 s", "10.00 s", "2.00× (1.20–3.00)", "≤ 1.5×", "**no**"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ratioRow = %q, want %q", got, want)
	}
	got = ratioRow("m", rounds[:1], op, floor, none, 1.5)
	want = []string{"m", "12.00 s", "10.00 s", "1.20×", "≤ 1.5×", "yes"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("one round: ratioRow = %q, want %q", got, want)
	}
	// A ratio shown without a target is neither met nor missed.
	got = ratioRow("m", rounds[:1], op, floor, none, noTarget)
	want = []string{"m", "12.00 s", "10.00 s", "1.20×", "—", "—"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("no target: ratioRow = %q, want %q", got, want)
	}
	rounds[1].convergenceTimeout = "timed out"
	if got := ratioRow("m", rounds, op, floor, func(rr *roundResult) string { return rr.convergenceTimeout }, 1.5); got[1] != "timeout" {
		t.Errorf("a round that timed out: ratioRow = %q", got)
	}
}

func TestMedian(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3 values = %v", got)
	}
	if got := median([]time.Duration{4 * time.Second, time.Second, 3 * time.Second, 2 * time.Second}); got != 2500*time.Millisecond {
		t.Errorf("median of 4 durations = %v, want the mean of the middle two, 2.5s", got)
	}
	if got := median([]float64{}); got != 0 {
		t.Errorf("median of none = %v", got)
	}
}

// measuredOnce is a floor measured before a round's phases only, as in a
// round that timed out.
func measuredOnce(d time.Duration) bracket {
	return bracket{before: timed{took: d}}
}

// A fan-out's writes are held to 1.3× their floor up to 2,000 Personas and
// to 1.5× beyond, where every status patch carries a longer history than
// the floor's.
func TestFanOutWritesTarget(t *testing.T) {
	for n, want := range map[int]float64{500: 1.3, 2000: 1.3, 2001: 1.5, 8000: 1.5, 20000: 1.5} {
		if got := fanOutWritesTarget(n); got != want {
			t.Errorf("fanOutWritesTarget(%d) = %v, want %v", n, got, want)
		}
	}
}
