package main

import (
	"encoding/json"
	"math"
	"os"
	"time"
)

// writeJSON writes the run's figures, curve holding each N's, to path.
func writeJSON(path string, started time.Time, first *report, curve []figuresJSON) error {
	raw, err := json.MarshalIndent(newRunJSON(started, first, curve), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// newRunJSON is the run's JSON: what every N shares from the first N's
// report, the largest N's figures at the top level.
func newRunJSON(started time.Time, first *report, curve []figuresJSON) runJSON {
	return runJSON{
		Timestamp:                  started.UTC().Round(time.Second),
		Machine:                    first.machine,
		ManagerFlags:               first.managerFlags,
		ManagerEnv:                 first.opts.managerEnv,
		HarnessWorkers:             first.opts.workers,
		APIServerConsistencyChecks: first.opts.consistencyChecks,
		figuresJSON:                curve[len(curve)-1],
		Curve:                      curve,
		Growth:                     growthOf(curve),
	}
}

// figuresOf is each report's figures, in the reports' order.
func figuresOf(reports []*report) []figuresJSON {
	out := make([]figuresJSON, len(reports))
	for i, r := range reports {
		out[i] = r.figures()
	}
	return out
}

// figures are the report's figures: the table's, as numbers.
func (r *report) figures() figuresJSON {
	rs := r.rounds
	n := float64(r.opts.n)
	steadyWrites, steadyByMethod := r.steadyWriteCounts()
	render := r.final.Histogram("persona_render_duration_seconds", nil)
	wh := r.webhookHandler
	noTimeout := func(*roundResult) string { return "" }
	f := figuresJSON{
		N:                 r.opts.n,
		Rounds:            len(rs),
		Timeouts:          timeouts(rs),
		LoadAverageBefore: r.loadBefore,
		LoadAverageAfter:  r.loadAfter,
		ElapsedS:          r.elapsed.Seconds(),

		ConvergenceFloorS:       median(mapRounds(rs, convergenceFloorOf)).Seconds(),
		ConvergenceEventsFloorS: median(mapRounds(rs, convergenceSpecFloorOf)).Seconds(),
		FloorsBefore:            floorsJSONOf(rs, func(b bracket) time.Duration { return b.before.took }),
		FloorsAfter:             floorsJSONOf(rs, func(b bracket) time.Duration { return b.after.took }),
		AdjacentFloorsS:         adjacentFloorsOf(rs),

		ConvergenceS:        operatorSeconds(rs, convergenceOf, convergenceTimeoutOf),
		ConvergenceCreatesS: operatorSeconds(rs, convergenceCreatesOf, convergenceTimeoutOf),

		ConvergenceRatio:       operatorRatio(rs, convergenceOf, convergenceFloorOf, convergenceTimeoutOf),
		ConvergenceEventsRatio: operatorRatio(rs, convergenceOf, convergenceSpecFloorOf, convergenceTimeoutOf),
		FanOutLeastRatio:       operatorRatio(rs, layerFanOut.specFloorAtConfigMaps, layerFanOut.floor, noTimeout),

		PeakRSSBytes:       r.peakRSS,
		BaselineRSSBytes:   r.baselineRSS,
		RSSPerPersonaBytes: float64(max(r.peakRSS-r.baselineRSS, 0)) / n,

		Renders:        render.Count,
		RenderTotalS:   render.Sum,
		RenderP50S:     finite(render.Quantile(0.5)),
		RenderP99S:     finite(render.Quantile(0.99)),
		RenderFailures: r.renderFailures,

		WebhookTurnedAway:   turnedAwayTotal(r.turnedAway),
		WebhookTurnedAwayBy: r.turnedAway,

		SteadyWindowS:        r.opts.steady.Seconds(),
		SteadyWrites:         steadyWrites,
		SteadyWritesByMethod: steadyByMethod,

		WebhookSamples:      len(r.webhookOn),
		WebhookOnP50S:       r.webhookOn.quantile(0.5).Seconds(),
		WebhookOffP50S:      r.webhookOff.quantile(0.5).Seconds(),
		WebhookOnP99S:       r.webhookOn.quantile(0.99).Seconds(),
		WebhookOffP99S:      r.webhookOff.quantile(0.99).Seconds(),
		WebhookHandlerMeanS: wh.Sum / max(wh.Count, 1),
		WebhookHandlerP99S:  finite(wh.BucketOf(0.99)),

		InjectOnSamples:     len(r.injectOn),
		InjectOnP50S:        r.injectOn.quantile(0.5).Seconds(),
		InjectOnP99S:        r.injectOn.quantile(0.99).Seconds(),
		InjectCanarySamples: len(r.injectCanary),
		InjectCanaryP50S:    r.injectCanary.quantile(0.5).Seconds(),
		InjectCanaryP99S:    r.injectCanary.quantile(0.99).Seconds(),
		InjectOffSamples:    len(r.injectOff),
		InjectOffP50S:       r.injectOff.quantile(0.5).Seconds(),
		InjectOffP99S:       r.injectOff.quantile(0.99).Seconds(),

		InjectLiveHeapGrowthBytes: r.injectLiveHeapGrowth,
		InjectRSSGrowthBytes:      r.injectRSSGrowth,
	}
	f.setFanOutFigures(rs)
	f.restartJSON = r.restartFigures()
	f.ConvergencePerPersonaS = perPersona(f.ConvergenceS, n)
	f.FanOutPerPersonaS = perPersona(f.FanOutS, n)
	return f
}

// floorsJSONOf is the medians of one turn of the five floors, which of
// picks from each bracket, over the rounds that measured it: a round that
// timed out measured no floors after.
func floorsJSONOf(rounds []*roundResult, of func(bracket) time.Duration) floorsJSON {
	at := func(b func(*roundFloors) bracket) float64 {
		return medianMeasured(rounds, func(rr *roundResult) time.Duration { return of(b(&rr.floors)) }).Seconds()
	}
	return floorsJSON{
		ConvergenceS:             at(convergenceBracket),
		ConvergenceEventsS:       at(convergenceSpecBracket),
		FanOutS:                  at(fanOutBracket),
		FanOutStatusS:            at(fanOutSpecBracket),
		FanOutStatusLongHistoryS: at(fanOutSpecLongBracket),
	}
}

// adjacentFloorsOf is the medians of the adjacent floors over the rounds
// that measured them, in the order they were measured: as many as the
// round that measured most took.
func adjacentFloorsOf(rounds []*roundResult) []float64 {
	out := []float64{}
	for k := range fanOutsPerRound + 1 {
		d := medianMeasured(rounds, func(rr *roundResult) time.Duration { return rr.floors.adjacent[k].took })
		if d <= 0 {
			break
		}
		out = append(out, d.Seconds())
	}
	return out
}

// medianMeasured is the median of a floor over the rounds that measured
// it (a time above 0); 0 when none did.
func medianMeasured(rounds []*roundResult, of func(*roundResult) time.Duration) time.Duration {
	var measured []time.Duration
	for _, rr := range rounds {
		if d := of(rr); d > 0 {
			measured = append(measured, d)
		}
	}
	return median(measured)
}

// operatorSeconds is the median of an operator time over the rounds, or
// nil when a round timed out or did not run the measure.
func operatorSeconds(rounds []*roundResult, operator func(*roundResult) time.Duration, timeout func(*roundResult) string) *float64 {
	if len(rounds) == 0 {
		return nil
	}
	for _, rr := range rounds {
		if timeout(rr) != "" || operator(rr) <= 0 {
			return nil
		}
	}
	return new(median(mapRounds(rounds, operator)).Seconds())
}

// operatorRatio is the median of the rounds' ratios of an operator time to
// its own round's floor, as the table gives it, or nil where
// operatorSeconds is.
func operatorRatio(rounds []*roundResult, operator, floor func(*roundResult) time.Duration, timeout func(*roundResult) string) *float64 {
	ratios := roundRatios(rounds, operator, floor)
	if operatorSeconds(rounds, operator, timeout) == nil || len(ratios) == 0 {
		return nil
	}
	return new(median(ratios))
}

func perPersona(seconds *float64, n float64) *float64 {
	if seconds == nil {
		return nil
	}
	return new(*seconds / n)
}

// finite is x, or nil for what JSON cannot hold: a quantile of no samples
// (NaN) or one above the highest bucket (+Inf).
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// timeouts are the rounds' timeout messages; empty, not null, without any.
func timeouts(rounds []*roundResult) []string {
	out := []string{}
	for _, rr := range rounds {
		for _, t := range []string{rr.convergenceTimeout, rr.fanOut.timeout, rr.clusterFanOut.timeout, rr.parentFanOut.timeout,
			rr.platformCreate.timeout, rr.platformEdit.timeout, rr.platformDelete.timeout} {
			if t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// setFanOutFigures sets the figures of the round's six fan-outs from their
// measures; a nil field is a figure the fan-out does not have (the
// parent's ConfigMaps against the floor with status).
func (f *figuresJSON) setFanOutFigures(rs []*roundResult) {
	for _, p := range []struct {
		m                                                fanOutMeasure
		floor, adjacentFloor, statusFloor                *float64
		configMaps, statuses                             **float64
		ratio, adjacentRatio, vsStatusFloor, statusRatio **float64
	}{
		{layerFanOut, &f.FanOutFloorS, &f.FanOutAdjacentFloorS, &f.FanOutStatusFloorS,
			&f.FanOutS, &f.FanOutStatusS,
			&f.FanOutRatio, &f.FanOutAdjacentRatio, &f.FanOutVsStatusFloorRatio, &f.FanOutStatusRatio},
		{clusterFanOut, &f.ClusterFanOutFloorS, &f.ClusterFanOutAdjacentFloorS, &f.ClusterFanOutStatusFloorS,
			&f.ClusterFanOutS, &f.ClusterFanOutStatusS,
			&f.ClusterFanOutRatio, &f.ClusterFanOutAdjacentRatio, &f.ClusterFanOutVsStatusFloorRatio, &f.ClusterFanOutStatusRatio},
		{parentFanOut, &f.ParentFanOutFloorS, &f.ParentFanOutAdjacentFloorS, &f.ParentFanOutStatusFloorS,
			&f.ParentFanOutS, &f.ParentFanOutStatusS,
			&f.ParentFanOutRatio, &f.ParentFanOutAdjacentRatio, nil, &f.ParentFanOutStatusRatio},
		{platformCreateFanOut, &f.PlatformCreateFanOutFloorS, &f.PlatformCreateFanOutAdjacentFloorS, &f.PlatformCreateFanOutStatusFloorS,
			&f.PlatformCreateFanOutS, &f.PlatformCreateFanOutStatusS,
			&f.PlatformCreateFanOutRatio, &f.PlatformCreateFanOutAdjacentRatio, &f.PlatformCreateFanOutVsStatusFloorRatio, &f.PlatformCreateFanOutStatusRatio},
		{platformEditFanOut, &f.PlatformFanOutFloorS, &f.PlatformFanOutAdjacentFloorS, &f.PlatformFanOutStatusFloorS,
			&f.PlatformFanOutS, &f.PlatformFanOutStatusS,
			&f.PlatformFanOutRatio, &f.PlatformFanOutAdjacentRatio, &f.PlatformFanOutVsStatusFloorRatio, &f.PlatformFanOutStatusRatio},
		{platformDeleteFanOut, &f.PlatformDeleteFanOutFloorS, &f.PlatformDeleteFanOutAdjacentFloorS, &f.PlatformDeleteFanOutStatusFloorS,
			&f.PlatformDeleteFanOutS, &f.PlatformDeleteFanOutStatusS,
			&f.PlatformDeleteFanOutRatio, &f.PlatformDeleteFanOutAdjacentRatio, &f.PlatformDeleteFanOutVsStatusFloorRatio, &f.PlatformDeleteFanOutStatusRatio},
	} {
		m := p.m
		*p.floor = median(mapRounds(rs, m.floor)).Seconds()
		*p.adjacentFloor = median(mapRounds(rs, m.adjacentFloor)).Seconds()
		*p.adjacentRatio = operatorRatio(rs, m.configMaps, m.adjacentFloor, m.timeout)
		*p.statusFloor = median(mapRounds(rs, m.specFloor)).Seconds()
		*p.configMaps = operatorSeconds(rs, m.configMaps, m.timeout)
		*p.statuses = operatorSeconds(rs, m.statuses, m.timeout)
		*p.ratio = operatorRatio(rs, m.configMaps, m.floor, m.timeout)
		if p.vsStatusFloor != nil {
			*p.vsStatusFloor = operatorRatio(rs, m.configMaps, m.specFloorAtConfigMaps, m.timeout)
		}
		*p.statusRatio = operatorRatio(rs, m.statuses, m.specFloor, m.timeout)
	}
}
