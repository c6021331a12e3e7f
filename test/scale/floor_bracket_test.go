package main

import (
	"testing"
	"time"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func TestBracketAt(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC)
	b := bracket{before: timed{took: 4 * time.Second, mid: t0}, after: timed{took: 6 * time.Second, mid: t0.Add(100 * time.Second)}}
	for _, c := range []struct {
		at   time.Time
		want time.Duration
	}{
		{t0, 4 * time.Second},
		{t0.Add(25 * time.Second), 4500 * time.Millisecond}, // a quarter of the way: 4 s + 2 s / 4
		{t0.Add(100 * time.Second), 6 * time.Second},
		{t0.Add(-time.Minute), 4 * time.Second}, // held outside the two measurements
		{t0.Add(time.Hour), 6 * time.Second},
	} {
		if got := b.at(c.at); got != c.want {
			t.Errorf("at %s: %s, want %s", c.at.Sub(t0), got, c.want)
		}
	}
	// A round that timed out measured no after floor: the before one stands.
	if got := (bracket{before: b.before}).at(t0.Add(50 * time.Second)); got != 4*time.Second {
		t.Errorf("without an after floor: %s, want 4s", got)
	}
	// A floor that fell after the phases interpolates downwards.
	down := bracket{before: b.after, after: timed{took: 2 * time.Second, mid: t0.Add(200 * time.Second)}}
	down.before.mid = t0
	if got := down.at(t0.Add(50 * time.Second)); got != 5*time.Second {
		t.Errorf("falling floor at a quarter: %s, want 5s", got)
	}
}

// A fan-out's floor with status lies between the floor patched with the
// first fan-out's history (2 revisions) and the one with the last's (7),
// by its own history's length; without the second, it is the first.
func TestSpecFloorByHistory(t *testing.T) {
	if longestFloorHistory != historyOf(platformDeleteFanOutIndex) || longestFloorHistory > v1alpha1.MaxStatusHistory {
		t.Fatalf("the long floor's history %d is not the last fan-out's, %d, within %d", longestFloorHistory, historyOf(platformDeleteFanOutIndex), v1alpha1.MaxStatusHistory)
	}
	f := roundFloors{fanOutSpec: measuredOnce(4 * time.Second), fanOutSpecLong: measuredOnce(9 * time.Second)}
	// 4 s at 2 revisions, 9 s at 7: one second a revision.
	for history, want := range map[int]time.Duration{2: 4 * time.Second, 3: 5 * time.Second, 6: 8 * time.Second, 7: 9 * time.Second, 10: 9 * time.Second} {
		if got := f.specFloorAt(history, time.Time{}); got != want {
			t.Errorf("with %d revisions: %v, want %v", history, got, want)
		}
	}
	f.fanOutSpecLong = bracket{}
	if got := f.specFloorAt(7, time.Time{}); got != 4*time.Second {
		t.Errorf("without the long floor: %v, want 4s", got)
	}
	rr := &roundResult{floors: roundFloors{fanOutSpec: measuredOnce(4 * time.Second), fanOutSpecLong: measuredOnce(9 * time.Second)},
		platformEdit: fanOutResult{configMaps: time.Second, statuses: 2 * time.Second}}
	// The PromptPlatform's edit is the fifth fan-out: 6 revisions.
	if got := platformEditFanOut.specFloor(rr); got != 8*time.Second {
		t.Errorf("the PromptPlatform edit's floor with status: %v, want 8s", got)
	}
	if got := layerFanOut.specFloor(rr); got != 4*time.Second {
		t.Errorf("the PromptLayer fan-out's floor with status: %v, want 4s", got)
	}
}
