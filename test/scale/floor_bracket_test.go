package main

import (
	"testing"
	"time"
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
