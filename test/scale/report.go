package main

import (
	"time"

	"github.com/persona-operator/persona-operator/test/scrape"
)

// report collects the run's figures.
type report struct {
	opts         options
	machine      string
	managerFlags []string
	logPath      string
	// profiles are the CPU profiles written with -profile.
	profiles      []string
	profileErrors []error
	logOffset     int64

	loadBefore, loadAfter string
	elapsed               time.Duration

	rounds []*roundResult
	// round is the round being measured.
	round          int
	webhookHandler scrape.Histogram
	steadyWrites   map[string]float64
	webhookOn      latencies
	webhookOff     latencies
	// injectOn and injectOff are the pod creates with the pod injection and
	// without, injectCanary with it for a Persona whose canary is in flight;
	// injectLiveHeapGrowth and injectRSSGrowth what labelledPods more
	// labelled pods added to the manager's live heap and its RSS.
	injectOn, injectCanary, injectOff     latencies
	injectLiveHeapGrowth, injectRSSGrowth int64
	// peakRSS is the highest of the managers' (one per round);
	// baselineRSS the highest of their RSS before any Persona existed.
	peakRSS, baselineRSS int64
	// final is the last manager's metrics; renderFailures sums every
	// manager's failures, turnedAway the admission requests every
	// manager's webhooks turned away at their bounds (by turnedAway's keys).
	final          scrape.Snapshot
	renderFailures float64
	turnedAway     map[string]float64

	phases []*phase
	// restarts are the restart phase's, one per restart.
	restarts []*restartResult
}
