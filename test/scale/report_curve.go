package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Targets of the curve: what a Persona costs should not grow with N.
const (
	growthTarget  = 1.2       // per Persona, from the smallest N to the largest
	peakRSSTarget = 300 << 20 // the manager's, at the largest N
)

// sizes is -curve's list of Ns, kept ascending without repeats, so that
// the first is the smallest and the last the largest.
type sizes []int

func (s *sizes) String() string {
	if s == nil {
		return ""
	}
	out := make([]string, len(*s))
	for i, n := range *s {
		out[i] = strconv.Itoa(n)
	}
	return strings.Join(out, ",")
}

func (s *sizes) Set(v string) error {
	var out sizes
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive number of Personas", f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	*s = slices.Compact(out)
	return nil
}

// growthOf compares the smallest N's figures with the largest's; nil with
// fewer than two Ns. points are ascending by N.
func growthOf(points []figuresJSON) *growthJSON {
	if len(points) < 2 {
		return nil
	}
	small, large := points[0], points[len(points)-1]
	return &growthJSON{
		SmallestN:                   small.N,
		LargestN:                    large.N,
		ConvergencePerPersonaGrowth: growth(small.ConvergencePerPersonaS, large.ConvergencePerPersonaS),
		FanOutPerPersonaGrowth:      growth(small.FanOutPerPersonaS, large.FanOutPerPersonaS),
		// The floors as measured before the phases: on an API server in the
		// same state at every N, not interpolated to the operator's times.
		ConvergenceFloorGrowth:   growth(perPersona(&small.FloorsBefore.ConvergenceEventsS, float64(small.N)), perPersona(&large.FloorsBefore.ConvergenceEventsS, float64(large.N))),
		FanOutFloorGrowth:        growth(perPersona(&small.FloorsBefore.FanOutS, float64(small.N)), perPersona(&large.FloorsBefore.FanOutS, float64(large.N))),
		RSSPerPersonaGrowth:      growth(&small.RSSPerPersonaBytes, &large.RSSPerPersonaBytes),
		GrowthTarget:             growthTarget,
		LargestPeakRSSBytes:      large.PeakRSSBytes,
		PeakRSSTargetBytes:       peakRSSTarget,
		SteadyWritesZeroAtEveryN: !slices.ContainsFunc(points, func(p figuresJSON) bool { return p.SteadyWrites != 0 }),
	}
}

// growth is large over small, or nil when either was not measured.
func growth(small, large *float64) *float64 {
	if small == nil || large == nil || *small <= 0 {
		return nil
	}
	return new(*large / *small)
}

// curveMarkdown is the curve's tables: each N's time and memory per
// Persona, then their growth from the smallest N to the largest against
// the targets.
func curveMarkdown(points []figuresJSON) string {
	var b strings.Builder
	ns := make([]string, len(points))
	rows := [][]string{{"N", "convergence per Persona", "fan-out per Persona", "manager peak RSS", "RSS per Persona", "steady-state writes"}}
	for i, p := range points {
		ns[i] = strconv.Itoa(p.N)
		rows = append(rows, []string{ns[i], msPer(p.ConvergencePerPersonaS), msPer(p.FanOutPerPersonaS), mib(p.PeakRSSBytes),
			kib(p.RSSPerPersonaBytes), fmt.Sprintf("%.0f", p.SteadyWrites)})
	}
	fmt.Fprintf(&b, "\n## persona-operator at scale: the curve over N=%s\n\n", strings.Join(ns, ", "))
	writeTable(&b, rows)
	fmt.Fprintf(&b, "\n- each N on a control plane and a manager of its own, the times medians of its rounds; per Persona: the time over N; "+
		"RSS per Persona: the peak RSS (VmHWM) less that of the manager started and settled with no Persona, over N\n")
	g := growthOf(points)
	if g == nil {
		b.WriteString("- growth: needs two Ns or more\n")
		return b.String()
	}
	small, large := points[0], points[len(points)-1]
	b.WriteString("\n")
	writeTable(&b, [][]string{
		{"measure", fmt.Sprintf("N=%d", g.SmallestN), fmt.Sprintf("N=%d", g.LargestN), "growth", "target", "met?"},
		growthRow("convergence time per Persona", msPer(small.ConvergencePerPersonaS), msPer(large.ConvergencePerPersonaS), g.ConvergencePerPersonaGrowth),
		growthRow("fan-out time per Persona", msPer(small.FanOutPerPersonaS), msPer(large.FanOutPerPersonaS), g.FanOutPerPersonaGrowth),
		floorGrowthRow("  the API server's own: its floor with the Rendered Events before the phases, per Persona", small.FloorsBefore.ConvergenceEventsS, large.FloorsBefore.ConvergenceEventsS, small.N, large.N, g.ConvergenceFloorGrowth),
		floorGrowthRow("  the API server's own: the fan-out floor before the phases, per Persona", small.FloorsBefore.FanOutS, large.FloorsBefore.FanOutS, small.N, large.N, g.FanOutFloorGrowth),
		growthRow("RSS per Persona", kib(small.RSSPerPersonaBytes), kib(large.RSSPerPersonaBytes), g.RSSPerPersonaGrowth),
		{"manager peak RSS", mib(small.PeakRSSBytes), mib(large.PeakRSSBytes), "—", fmt.Sprintf("≤ %d MiB at N=%d", peakRSSTarget>>20, g.LargestN),
			yesNo(large.PeakRSSBytes <= peakRSSTarget)},
		{"steady-state writes", fmt.Sprintf("%.0f", small.SteadyWrites), fmt.Sprintf("%.0f", large.SteadyWrites), "—", "0 at every N",
			yesNo(g.SteadyWritesZeroAtEveryN)},
	})
	return b.String()
}

// growthRow is a per-Persona figure at the smallest and the largest N and
// its growth against growthTarget.
func growthRow(measure, small, large string, g *float64) []string {
	target := fmt.Sprintf("≤ %.1f×", growthTarget)
	if g == nil {
		return []string{measure, small, large, "—", target, "**no** (not measured)"}
	}
	return []string{measure, small, large, fmt.Sprintf("%.2f×", *g), target, yesNo(*g <= growthTarget)}
}

// floorGrowthRow is how a floor's time per Persona grows: what the API
// server itself adds with N, which no operator can take away. The floors
// are those measured before the phases, as the growth's are: the API
// server in the same state at every N.
func floorGrowthRow(measure string, small, large float64, smallN, largeN int, g *float64) []string {
	row := []string{measure, msPer(perPersona(&small, float64(smallN))), msPer(perPersona(&large, float64(largeN))), "—", "—", "—"}
	if g != nil {
		row[3] = fmt.Sprintf("%.2f×", *g)
	}
	return row
}

// msPer is a time per Persona, in ms; — when it was not measured.
func msPer(seconds *float64) string {
	if seconds == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f ms", *seconds*1000)
}
