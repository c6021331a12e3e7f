package main

import (
	"fmt"
	"slices"
	"time"
)

// Targets, each a ratio to a floor measured in the same round.
const (
	// The ConfigMaps of a fan-out, against N bare ConfigMap updates.
	deliveryTarget = 1.5
	// Everything that personas.md#conditions requires to be written:
	// convergence's Personas Ready, a fan-out's statuses current.
	requiredWritesTarget = 1.3
	// A fan-out's statuses current past requiredWritesTargetUpTo
	// Personas, where every status patch carries a longer history than the
	// floor's (docs/performance.md#capacity).
	largeFanOutWritesTarget  = 1.5
	requiredWritesTargetUpTo = 2000
	webhookP99AddedLimit     = 10 * time.Millisecond
)

// fanOutWritesTarget is the target of a fan-out's writes at n Personas.
func fanOutWritesTarget(n int) float64 {
	if n > requiredWritesTargetUpTo {
		return largeFanOutWritesTarget
	}
	return requiredWritesTarget
}

// noTarget marks a ratio shown for what it explains, not held to a target.
const noTarget = 0

// ratioRow summarizes one measure over the rounds: the medians of the
// operator's and the floor's times, and the median of the rounds' ratios
// (each operator time over the floor of its own round) with their range.
func ratioRow(measure string, rounds []*roundResult, operator, floor func(*roundResult) time.Duration, timeout func(*roundResult) string, limit float64) []string {
	target := "—"
	if limit != noTarget {
		target = fmt.Sprintf("≤ %.1f×", limit)
	}
	for _, rr := range rounds {
		if t := timeout(rr); t != "" {
			return []string{measure, "timeout", secs(floor(rr)), "—", target, "**no** (timeout)"}
		}
	}
	ops, floors := mapRounds(rounds, operator), mapRounds(rounds, floor)
	ratios := roundRatios(rounds, operator, floor)
	if len(ratios) == 0 {
		return []string{measure, secs(median(ops)), "—", "—", target, "—"}
	}
	ratio := median(ratios)
	desc := fmt.Sprintf("%.2f×", ratio)
	if len(ratios) > 1 {
		desc += fmt.Sprintf(" (%.2f–%.2f)", slices.Min(ratios), slices.Max(ratios))
	}
	met := "—"
	if limit != noTarget {
		met = yesNo(ratio <= limit)
	}
	return []string{measure, secs(median(ops)), secs(median(floors)), desc, target, met}
}

// roundRatios are each round's operator time over the floor of its own
// round, for the rounds that measured the floor.
func roundRatios(rounds []*roundResult, operator, floor func(*roundResult) time.Duration) []float64 {
	var ratios []float64
	for _, rr := range rounds {
		if floor(rr) > 0 {
			ratios = append(ratios, operator(rr).Seconds()/floor(rr).Seconds())
		}
	}
	return ratios
}

// leastRow is the ratio of fan-out's floors, both at the middle of the
// PromptLayer fan-out's ConfigMaps: the one that also makes the writes
// personas.md#conditions requires over the bare one, in the operator
// column. No operator that makes those writes can beat it, so it has no
// target.
func leastRow(measure string, rounds []*roundResult) []string {
	return ratioRow(measure, rounds, layerFanOut.specFloorAtConfigMaps, layerFanOut.floor, func(*roundResult) string { return "" }, noTarget)
}

// median is the middle value; of an even count, the mean of the middle two.
func median[T time.Duration | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mapRounds(rounds []*roundResult, f func(*roundResult) time.Duration) []time.Duration {
	out := make([]time.Duration, len(rounds))
	for i, rr := range rounds {
		out[i] = f(rr)
	}
	return out
}
