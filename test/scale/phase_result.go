package main

import "time"

// roundResult is what one round measured.
type roundResult struct {
	// floors are measured before the operator's phases and after them;
	// each operator time stands beside them interpolated to its middle.
	floors                                  roundFloors
	convergence, convergenceCreates, fanOut time.Duration
	// clusterFanOut is the fan-out of the ClusterPromptLayer edit; its
	// floors are fan-out's: the same writes.
	clusterFanOut time.Duration
	// parentFanOut is the fan-out of the edit of the parent Persona;
	// its floors are fan-out's too.
	parentFanOut time.Duration
	// The statuses run on from the same edits until every Persona's status
	// also names its ConfigMap's new hash.
	fanOutStatuses, clusterFanOutStatuses, parentFanOutStatuses time.Duration
	// When convergence's creates and each fan-out's edit began.
	convergenceStart, fanOutStart, clusterFanOutStart, parentFanOutStart         time.Time
	convergenceTimeout, fanOutTimeout, clusterFanOutTimeout, parentFanOutTimeout string
	// The PromptPlatform's fan-outs (phase_platform.go): its create, an edit and
	// its delete; their floors are fan-out's too.
	platformCreate, platformEdit, platformDelete fanOutResult
}

// Each round's times and timeouts, by measure, for the tables and the JSON.
var (
	convergenceOf           = func(rr *roundResult) time.Duration { return rr.convergence }
	convergenceCreatesOf    = func(rr *roundResult) time.Duration { return rr.convergenceCreates }
	fanOutOf                = func(rr *roundResult) time.Duration { return rr.fanOut }
	fanOutStatusesOf        = func(rr *roundResult) time.Duration { return rr.fanOutStatuses }
	clusterFanOutOf         = func(rr *roundResult) time.Duration { return rr.clusterFanOut }
	clusterFanOutStatusesOf = func(rr *roundResult) time.Duration { return rr.clusterFanOutStatuses }
	parentFanOutOf          = func(rr *roundResult) time.Duration { return rr.parentFanOut }
	parentFanOutStatusesOf  = func(rr *roundResult) time.Duration { return rr.parentFanOutStatuses }
	parentFanOutTimeoutOf   = func(rr *roundResult) string { return rr.parentFanOutTimeout }
	convergenceTimeoutOf    = func(rr *roundResult) string { return rr.convergenceTimeout }
	fanOutTimeoutOf         = func(rr *roundResult) string { return rr.fanOutTimeout }
	clusterFanOutTimeoutOf  = func(rr *roundResult) string { return rr.clusterFanOutTimeout }

	convergenceStartOf   = func(rr *roundResult) time.Time { return rr.convergenceStart }
	fanOutStartOf        = func(rr *roundResult) time.Time { return rr.fanOutStart }
	clusterFanOutStartOf = func(rr *roundResult) time.Time { return rr.clusterFanOutStart }
	parentFanOutStartOf  = func(rr *roundResult) time.Time { return rr.parentFanOutStart }

	convergenceBracket     = func(f *roundFloors) bracket { return f.convergence }
	convergenceSpecBracket = func(f *roundFloors) bracket { return f.convergenceSpec }
	fanOutBracket          = func(f *roundFloors) bracket { return f.fanOut }
	fanOutSpecBracket      = func(f *roundFloors) bracket { return f.fanOutSpec }
	fanOutSpecLongBracket  = func(f *roundFloors) bracket { return f.fanOutSpecLong }

	// Each operator time's floors, interpolated to its middle. The
	// fan-outs make the same writes, so they share fan-out's brackets; the
	// status patches carry the history each fan-out's statuses have
	// (historyOf).
	convergenceFloorOf       = floorAt(convergenceBracket, convergenceStartOf, convergenceOf)
	convergenceSpecFloorOf   = floorAt(convergenceSpecBracket, convergenceStartOf, convergenceOf)
	fanOutFloorOf            = floorAt(fanOutBracket, fanOutStartOf, fanOutOf)
	fanOutSpecFloorOf        = specFloorFor(historyOf(layerFanOutIndex), fanOutStartOf, fanOutStatusesOf)
	clusterFanOutFloorOf     = floorAt(fanOutBracket, clusterFanOutStartOf, clusterFanOutOf)
	clusterFanOutSpecFloorOf = specFloorFor(historyOf(clusterFanOutIndex), clusterFanOutStartOf, clusterFanOutStatusesOf)
	parentFanOutFloorOf      = floorAt(fanOutBracket, parentFanOutStartOf, parentFanOutOf)
	parentFanOutSpecFloorOf  = specFloorFor(historyOf(parentFanOutIndex), parentFanOutStartOf, parentFanOutStatusesOf)
	// The floor with each status patch at the middle of a fan-out's
	// ConfigMaps, for their time against it.
	fanOutSpecFloorAtConfigMapsOf        = specFloorFor(historyOf(layerFanOutIndex), fanOutStartOf, fanOutOf)
	clusterFanOutSpecFloorAtConfigMapsOf = specFloorFor(historyOf(clusterFanOutIndex), clusterFanOutStartOf, clusterFanOutOf)
)

// The round's fan-outs, in the order they run (phase_round.go): each
// delivers every measured Persona a new revision.
const (
	layerFanOutIndex = iota
	clusterFanOutIndex
	parentFanOutIndex
	platformCreateFanOutIndex
	platformEditFanOutIndex
	platformDeleteFanOutIndex
	fanOutsPerRound
)

// historyOf is how many revisions status.history holds in fan-out k: the
// Personas' first revision, from convergence, and one per fan-out so far.
func historyOf(k int) int { return k + 2 }

func (rr *roundResult) timeout() bool {
	return rr.convergenceTimeout != "" || rr.fanOutTimeout != "" || rr.clusterFanOutTimeout != "" || rr.parentFanOutTimeout != "" ||
		rr.platformCreate.timeout != "" || rr.platformEdit.timeout != "" || rr.platformDelete.timeout != ""
}

// fanOutResult is what one fan-out phase measured: when its edit was made,
// the time until every ConfigMap, then every status, had the new hash, and
// its timeout, if it timed out.
type fanOutResult struct {
	start                time.Time
	configMaps, statuses time.Duration
	timeout              string
}

// fanOutMeasure is one fan-out's times, timeout and floors, by round, for
// the tables and the JSON. Every fan-out makes the same writes as the
// PromptLayer's, so it stands beside fan-out's brackets at its own moment.
type fanOutMeasure struct {
	configMaps, statuses func(*roundResult) time.Duration
	timeout              func(*roundResult) string
	// floor is the bare floor at the middle of the ConfigMaps' time,
	// adjacentFloor the one measured beside the fan-out, specFloor the
	// floor with each status patch at the middle of the statuses' time,
	// specFloorAtConfigMaps that one at the ConfigMaps'.
	floor, adjacentFloor, specFloor, specFloorAtConfigMaps func(*roundResult) time.Duration
}

// fanOutMeasureOf is the measure of the fan-out result get picks, fan-out
// k of the round.
func fanOutMeasureOf(k int, get func(*roundResult) *fanOutResult) fanOutMeasure {
	start := func(rr *roundResult) time.Time { return get(rr).start }
	configMaps := func(rr *roundResult) time.Duration { return get(rr).configMaps }
	statuses := func(rr *roundResult) time.Duration { return get(rr).statuses }
	return fanOutMeasure{
		configMaps:            configMaps,
		statuses:              statuses,
		timeout:               func(rr *roundResult) string { return get(rr).timeout },
		floor:                 floorAt(fanOutBracket, start, configMaps),
		adjacentFloor:         adjacentFloorFor(k, start, configMaps),
		specFloor:             specFloorFor(historyOf(k), start, statuses),
		specFloorAtConfigMaps: specFloorFor(historyOf(k), start, configMaps),
	}
}

// The round's first three fan-outs, whose results have fields of their own.
var (
	layerFanOut = fanOutMeasure{configMaps: fanOutOf, statuses: fanOutStatusesOf, timeout: fanOutTimeoutOf,
		floor: fanOutFloorOf, adjacentFloor: adjacentFloorFor(layerFanOutIndex, fanOutStartOf, fanOutOf),
		specFloor: fanOutSpecFloorOf, specFloorAtConfigMaps: fanOutSpecFloorAtConfigMapsOf}
	clusterFanOut = fanOutMeasure{configMaps: clusterFanOutOf, statuses: clusterFanOutStatusesOf, timeout: clusterFanOutTimeoutOf,
		floor: clusterFanOutFloorOf, adjacentFloor: adjacentFloorFor(clusterFanOutIndex, clusterFanOutStartOf, clusterFanOutOf),
		specFloor: clusterFanOutSpecFloorOf, specFloorAtConfigMaps: clusterFanOutSpecFloorAtConfigMapsOf}
	parentFanOut = fanOutMeasure{configMaps: parentFanOutOf, statuses: parentFanOutStatusesOf, timeout: parentFanOutTimeoutOf,
		floor: parentFanOutFloorOf, adjacentFloor: adjacentFloorFor(parentFanOutIndex, parentFanOutStartOf, parentFanOutOf),
		specFloor: parentFanOutSpecFloorOf, specFloorAtConfigMaps: specFloorFor(historyOf(parentFanOutIndex), parentFanOutStartOf, parentFanOutOf)}
)

// The PromptPlatform's three fan-outs.
var (
	platformCreateFanOut = fanOutMeasureOf(platformCreateFanOutIndex, func(rr *roundResult) *fanOutResult { return &rr.platformCreate })
	platformEditFanOut   = fanOutMeasureOf(platformEditFanOutIndex, func(rr *roundResult) *fanOutResult { return &rr.platformEdit })
	platformDeleteFanOut = fanOutMeasureOf(platformDeleteFanOutIndex, func(rr *roundResult) *fanOutResult { return &rr.platformDelete })
)
