package main

import "time"

// roundResult is what one round measured.
type roundResult struct {
	// floors are measured before the operator's phases and after them;
	// each operator time stands beside them interpolated to its middle.
	floors                          roundFloors
	convergence, convergenceCreates time.Duration
	// When convergence's creates began, and its timeout.
	convergenceStart   time.Time
	convergenceTimeout string
	// The fan-outs of the PromptLayer edit, of the ClusterPromptLayer edit
	// and of the edit of the parent Persona; their floors are fan-out's:
	// the same writes.
	fanOut, clusterFanOut, parentFanOut fanOutResult
	// The PromptPlatform's fan-outs (phase_platform.go): its create, an edit and
	// its delete; their floors are fan-out's too.
	platformCreate, platformEdit, platformDelete fanOutResult
}

// Each round's times and timeouts, by measure, for the tables and the JSON.
var (
	convergenceOf        = func(rr *roundResult) time.Duration { return rr.convergence }
	convergenceCreatesOf = func(rr *roundResult) time.Duration { return rr.convergenceCreates }
	convergenceTimeoutOf = func(rr *roundResult) string { return rr.convergenceTimeout }
	convergenceStartOf   = func(rr *roundResult) time.Time { return rr.convergenceStart }

	convergenceBracket     = func(f *roundFloors) bracket { return f.convergence }
	convergenceSpecBracket = func(f *roundFloors) bracket { return f.convergenceSpec }
	fanOutBracket          = func(f *roundFloors) bracket { return f.fanOut }
	fanOutSpecBracket      = func(f *roundFloors) bracket { return f.fanOutSpec }
	fanOutSpecLongBracket  = func(f *roundFloors) bracket { return f.fanOutSpecLong }

	// Convergence's floors, interpolated to its middle; each fan-out's are
	// its measure's (fanOutMeasureOf).
	convergenceFloorOf     = floorAt(convergenceBracket, convergenceStartOf, convergenceOf)
	convergenceSpecFloorOf = floorAt(convergenceSpecBracket, convergenceStartOf, convergenceOf)
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
	return rr.convergenceTimeout != "" || rr.fanOut.timeout != "" || rr.clusterFanOut.timeout != "" || rr.parentFanOut.timeout != "" ||
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

// The round's six fan-outs.
var (
	layerFanOut          = fanOutMeasureOf(layerFanOutIndex, func(rr *roundResult) *fanOutResult { return &rr.fanOut })
	clusterFanOut        = fanOutMeasureOf(clusterFanOutIndex, func(rr *roundResult) *fanOutResult { return &rr.clusterFanOut })
	parentFanOut         = fanOutMeasureOf(parentFanOutIndex, func(rr *roundResult) *fanOutResult { return &rr.parentFanOut })
	platformCreateFanOut = fanOutMeasureOf(platformCreateFanOutIndex, func(rr *roundResult) *fanOutResult { return &rr.platformCreate })
	platformEditFanOut   = fanOutMeasureOf(platformEditFanOutIndex, func(rr *roundResult) *fanOutResult { return &rr.platformEdit })
	platformDeleteFanOut = fanOutMeasureOf(platformDeleteFanOutIndex, func(rr *roundResult) *fanOutResult { return &rr.platformDelete })
)
