package main

import (
	"fmt"
	"time"
)

// timed is one measurement of a floor and the moment halfway through it.
type timed struct {
	took time.Duration
	mid  time.Time
}

// bracket is one floor measured twice in a round: before the operator's
// phases and again after them. The API server's heap grows through a
// round (its watch cache holds the whole objects of every recent event),
// and its garbage collection with it, so a floor measured only before
// would stand the later phases beside a floor they never ran with.
type bracket struct {
	before, after timed
}

// at is the floor at moment t, interpolated linearly in time between the
// two measurements and held at their values outside them: the floor the
// API server would have given in the state it was in at t. Without an
// after measurement (a round that timed out) it is the before one; without
// either, 0.
func (b bracket) at(t time.Time) time.Duration {
	if b.after.took <= 0 || !b.after.mid.After(b.before.mid) {
		return b.before.took
	}
	span := b.after.mid.Sub(b.before.mid)
	into := min(max(t.Sub(b.before.mid), 0), span)
	return b.before.took + time.Duration(float64(b.after.took-b.before.took)*float64(into)/float64(span))
}

// roundFloors are the floors of a round. fanOutSpec patches each status
// with the history of the round's first fan-out (shortestFloorHistory
// revisions), fanOutSpecLong, measured after it, with that of its last
// (longestFloorHistory): a status patch carries the history whole, which
// costs the API server more the longer it is (BenchmarkStatusPatchByHistory).
type roundFloors struct {
	convergence, convergenceSpec, fanOut, fanOutSpec, fanOutSpecLong bracket
	// adjacent are the bare fan-out floors measured beside the fan-outs
	// (floor_adjacent.go): the k-th before fan-out k, after fan-out k-1.
	adjacent [fanOutsPerRound + 1]timed
}

// adjacentFloorFor is the accessor of the bare fan-out floor beside fan-out
// k, interpolated to the middle of an operator measure between the floors
// measured just before it and just after it.
func adjacentFloorFor(k int, start func(*roundResult) time.Time, took func(*roundResult) time.Duration) func(*roundResult) time.Duration {
	return floorAt(func(f *roundFloors) bracket { return bracket{before: f.adjacent[k], after: f.adjacent[k+1]} }, start, took)
}

// The histories the spec floors' status patches carry: the measured
// Personas' in the round's first fan-out (their first revision and the
// fan-out's), and in its last.
const (
	shortestFloorHistory = 2
	longestFloorHistory  = 1 + fanOutsPerRound
)

// specFloorAt is the floor with each status patch at moment t for a
// fan-out whose statuses carry history revisions: between the two spec
// floors at t, linearly in the history's length, as the patch's cost grows
// (4.3, 5.8 and 6.8 ms of the API server's CPU at 2, 7 and 10 revisions).
// Without the long floor (a round that timed out before it) it is the
// short one.
func (f *roundFloors) specFloorAt(history int, t time.Time) time.Duration {
	short, long := f.fanOutSpec.at(t), f.fanOutSpecLong.at(t)
	if long <= 0 {
		return short
	}
	into := float64(min(max(history, shortestFloorHistory), longestFloorHistory)-shortestFloorHistory) /
		float64(longestFloorHistory-shortestFloorHistory)
	return short + time.Duration(float64(long-short)*into)
}

// specFloorFor is the accessor of the spec floor of the fan-out whose
// statuses carry history revisions, interpolated to the middle of an
// operator measure.
func specFloorFor(history int, start func(*roundResult) time.Time, took func(*roundResult) time.Duration) func(*roundResult) time.Duration {
	return func(rr *roundResult) time.Duration {
		return rr.floors.specFloorAt(history, midway(start(rr), took(rr)))
	}
}

// midway is the moment halfway through an operator time that began at start.
func midway(start time.Time, took time.Duration) time.Time {
	return start.Add(took / 2)
}

// floorAt is the accessor of a floor interpolated to the middle of an
// operator measure: which bracket, when the measure began, how long it took.
func floorAt(floor func(*roundFloors) bracket, start func(*roundResult) time.Time, took func(*roundResult) time.Duration) func(*roundResult) time.Duration {
	return func(rr *roundResult) time.Duration {
		return floor(&rr.floors).at(midway(start(rr), took(rr)))
	}
}

// String is the two measurements, before → after, or the before one alone.
func (b bracket) String() string {
	if b.after.took <= 0 {
		return secs(b.before.took)
	}
	return fmt.Sprintf("%.2f → %s", b.before.took.Seconds(), secs(b.after.took))
}
