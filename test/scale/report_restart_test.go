package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The restart figures are medians of the restarts' times and ratios, and
// totals of what they wrote and flipped; null, with a count of 0, when the
// phase did not run.
func TestRestartFigures(t *testing.T) {
	ms := time.Millisecond
	r := testReport(10)
	r.restarts = []*restartResult{
		{floor: 100 * ms, informerFloor: 60 * ms, edit: 120 * ms, managerWrites: map[string]float64{"PUT": 1, "PATCH": 1, "POST": 1}, peakRSS: 300 << 20},
		{floor: 200 * ms, informerFloor: 250 * ms, edit: 500 * ms, changed: []string{"ConfigMap/persona-agent-00007"}, flips: []string{"agent-00007"},
			managerWrites: map[string]float64{"PUT": 2, "PATCH": 2, "POST": 1}, peakRSS: 320 << 20},
		{floor: 150 * ms, informerFloor: 100 * ms, edit: 150 * ms, managerWrites: map[string]float64{"PUT": 1, "PATCH": 1, "POST": 1}, peakRSS: 310 << 20},
	}
	f := r.restartFigures()
	// Ratios 1.2, 2.5 and 1.0: median 1.2. Times' medians 150 ms and 150 ms.
	if f.Restarts != 3 || *f.RestartEditS != 0.15 || *f.RestartListFloorS != 0.15 || *f.RestartEditRatio != 1.2 ||
		*f.RestartUnchangedWrites != 1 || *f.RestartReadyFlips != 1 || *f.RestartManagerWrites != 3 {
		t.Errorf("restart figures %+v", f)
	}
	// Against the informer floor: ratios 2.0, 2.0 and 1.5, median 2.0; floors' median 100 ms.
	if *f.RestartInformerFloorS != 0.1 || *f.RestartInformerRatio != 2.0 {
		t.Errorf("informer floor %v, ratio %v", *f.RestartInformerFloorS, *f.RestartInformerRatio)
	}
	// The highest of the new processes' peaks: 320 MiB.
	if *f.RestartPeakRSSBytes != 320<<20 {
		t.Errorf("restart peak RSS %d", *f.RestartPeakRSSBytes)
	}
	rows := r.restartRows()
	if rows[5][1] != "320 MiB" {
		t.Errorf("the peak RSS row %q", rows[5])
	}
	if rows[3][3] != "2.00× (1.50–2.00)" {
		t.Errorf("the informer floor's row %q", rows[3])
	}
	if rows[0][1] != "1 (e.g. ConfigMap/persona-agent-00007, agent-00007)" || rows[0][5] != "**no**" || rows[2][3] != "1.20× (1.00–2.50)" || rows[2][5] != "yes" {
		t.Errorf("restart rows %q", rows)
	}

	r.restarts = nil
	raw, err := json.Marshal(r.figures())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"restart_count":0`, `"restart_edit_s":null`, `"restart_edit_ratio":null`, `"restart_unchanged_writes":null`, `"restart_ready_flips":null`, `"restart_peak_rss_bytes":null`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("the JSON without restarts lacks %s", key)
		}
	}
	if r.restartRows() != nil {
		t.Error("rows for a phase that did not run")
	}
}
