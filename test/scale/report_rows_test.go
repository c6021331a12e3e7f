package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/persona-operator/persona-operator/test/scrape"
)

func TestClusterFanOutRows(t *testing.T) {
	r := &report{opts: options{n: 10}, rounds: []*roundResult{
		{fanOut: fanOutResult{configMaps: 4e9}, floors: roundFloors{fanOut: measuredOnce(2e9), fanOutSpec: measuredOnce(3e9)}, clusterFanOut: fanOutResult{configMaps: 5e9, statuses: 9e9}},
		{fanOut: fanOutResult{configMaps: 4e9}, floors: roundFloors{fanOut: measuredOnce(2e9), fanOutSpec: measuredOnce(4e9)}, clusterFanOut: fanOutResult{configMaps: 6e9, statuses: 5e9}},
	}}
	// The ClusterPromptLayer's fan-out is the second: the floor beside it
	// is the second adjacent one, 5 s and 3 s, the third not measured.
	r.rounds[0].floors.adjacent[clusterFanOutIndex].took = 5e9
	r.rounds[1].floors.adjacent[clusterFanOutIndex].took = 3e9
	rows := r.timeRows()
	at := slices.IndexFunc(rows, func(row []string) bool { return strings.Contains(row[0], "edit 1 ClusterPromptLayer") })
	if at < 0 || at+3 > len(rows) {
		t.Fatalf("no ClusterPromptLayer rows in %q", rows)
	}
	got := rows[at : at+3]
	want := [][]string{
		{"fan-out: edit 1 ClusterPromptLayer → 10 ConfigMaps updated", "5.50 s", "2.00 s", "2.75× (2.50–3.00)", "≤ 1.5×", "**no**"},
		// 5 s over 5 s and 6 s over 3 s: ratios 1.00 and 2.00.
		{"  … against the bare updates measured beside it, the manager up and idle", "5.50 s", "4.00 s", "1.50× (1.00–2.00)", "≤ 1.5×", "yes"},
		// Statuses 9 s over 3 s and 5 s over 4 s: ratios 3.00 and 1.25.
		{"  … until every status is current, against the floor with each status patch", "7.00 s", "3.50 s", "2.12× (1.25–3.00)", "≤ 1.3×", "**no**"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rows = %q, want %q", got, want)
	}
	r.rounds[1].fanOut.timeout = "timed out"
	rows = r.timeRows()
	if last := rows[len(rows)-1]; !strings.HasPrefix(last[1], "not run") {
		t.Errorf("after a PromptLayer fan-out timed out: %q", last)
	}
	if n := len(r.roundRows()[0]); n != 19 {
		t.Errorf("the rounds' table has %d columns, want 19", n)
	}
}

// The PromptPlatform's rows follow the parent's, each pair beside the
// fan-out floors at its own moment; after a timeout the rest are not run.
func TestPlatformFanOutRows(t *testing.T) {
	r := &report{opts: options{n: 10}, rounds: []*roundResult{
		{fanOut: fanOutResult{configMaps: 4e9}, parentFanOut: fanOutResult{configMaps: 4e9}, floors: roundFloors{fanOut: measuredOnce(2e9), fanOutSpec: measuredOnce(4e9)},
			platformCreate: fanOutResult{configMaps: 2e9, statuses: 4e9}, platformEdit: fanOutResult{configMaps: 3e9, statuses: 6e9},
			platformDelete: fanOutResult{configMaps: 1e9, statuses: 2e9}},
	}}
	// The floors beside them: 1 s before the create, 3 s after it, 2 s
	// after the edit and the delete, no mid-points: each stands beside the
	// one before it.
	for k, took := range map[int]float64{platformCreateFanOutIndex: 1e9, platformEditFanOutIndex: 3e9, platformDeleteFanOutIndex: 2e9, platformDeleteFanOutIndex + 1: 2e9} {
		r.rounds[0].floors.adjacent[k].took = time.Duration(took)
	}
	rows := r.timeRows()
	beside := "  … against the bare updates measured beside it, the manager up and idle"
	want := [][]string{
		{"fan-out: create the PromptPlatform → 10 ConfigMaps updated", "2.00 s", "2.00 s", "1.00×", "≤ 1.5×", "yes"},
		{beside, "2.00 s", "1.00 s", "2.00×", "≤ 1.5×", "**no**"},
		{"  … until every status is current, against the floor with each status patch", "4.00 s", "4.00 s", "1.00×", "≤ 1.3×", "yes"},
		{"fan-out: edit the PromptPlatform → 10 ConfigMaps updated", "3.00 s", "2.00 s", "1.50×", "≤ 1.5×", "yes"},
		{beside, "3.00 s", "3.00 s", "1.00×", "≤ 1.5×", "yes"},
		{"  … until every status is current, against the floor with each status patch", "6.00 s", "4.00 s", "1.50×", "≤ 1.3×", "**no**"},
		{"fan-out: delete the PromptPlatform → 10 ConfigMaps updated", "1.00 s", "2.00 s", "0.50×", "≤ 1.5×", "yes"},
		{beside, "1.00 s", "2.00 s", "0.50×", "≤ 1.5×", "yes"},
		{"  … until every status is current, against the floor with each status patch", "2.00 s", "4.00 s", "0.50×", "≤ 1.3×", "yes"},
	}
	if got := rows[len(rows)-9:]; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rows = %q, want %q", got, want)
	}
	r.rounds[0].platformEdit.timeout = "timed out"
	rows = r.timeRows()
	if last := rows[len(rows)-1]; last[0] != platformDeletePhase || !strings.HasPrefix(last[1], "not run (the PromptPlatform fan-out timed out)") {
		t.Errorf("after the PromptPlatform's edit timed out: %q", last)
	}
	if !r.rounds[0].timeout() || len(timeouts(r.rounds)) != 1 {
		t.Errorf("the PromptPlatform's timeout: round timed out %v, timeouts %q", r.rounds[0].timeout(), timeouts(r.rounds))
	}
}

// The pod creates of a Persona with a canary in flight stand beside those
// without the injection at their p50 and at their p99, which has a target.
func TestCanaryInjectionRows(t *testing.T) {
	r := testReport(10)
	rows := r.webhookRows()
	at := slices.IndexFunc(rows, func(row []string) bool {
		return strings.HasPrefix(row[0], "labelled pod create p50, a canary in flight")
	})
	if at < 0 || at+2 > len(rows) {
		t.Fatalf("no canary rows in %q", rows)
	}
	want := [][]string{
		{"labelled pod create p50, a canary in flight vs injection off (2 + 2 sequential)", "3.0 ms", "2.0 ms", "+1.0 ms", "—", "—"},
		{"labelled pod create p99, a canary in flight vs injection off", "5.0 ms", "3.0 ms", "+2.0 ms", "≤ +10 ms", "yes"},
	}
	if got := rows[at : at+2]; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rows = %q, want %q", got, want)
	}
}

// Every manager's turned-away requests add up, by webhook and reason, and a
// phase's are what its manager turned away between its two scrapes.
func TestTurnedAwayAddsUpEveryManager(t *testing.T) {
	parse := func(text string) scrape.Snapshot {
		s, err := scrape.Parse(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := parse(`persona_webhook_requests_turned_away_total{webhook="validating",reason="NoTurnInTime"} 3
persona_webhook_requests_turned_away_total{webhook="injecting",reason="NoRoomToReceive"} 1
`)
	second := parse(`persona_webhook_requests_turned_away_total{webhook="validating",reason="NoTurnInTime"} 2
persona_webhook_requests_turned_away_total{webhook="validating",reason="OverSizeLimit"} 0
`)
	r := &report{}
	r.addManagerTotals(first)
	r.addManagerTotals(second)
	if got, want := turnedAwayText(r.turnedAway), "6 (injecting/NoRoomToReceive 1, validating/NoTurnInTime 5)"; got != want {
		t.Errorf("every manager's = %q, want %q", got, want)
	}
	ph := &phase{name: "convergence", before: second, after: first}
	if got, want := ph.describe(10), "admission requests turned away at the webhooks' bounds: 2 (injecting/NoRoomToReceive 1, validating/NoTurnInTime 1)"; !strings.Contains(got, want) {
		t.Errorf("the phase's description %q does not say %q", got, want)
	}
	if got := turnedAwayText(map[string]float64{}); got != "0" {
		t.Errorf("none turned away = %q, want 0", got)
	}
}
