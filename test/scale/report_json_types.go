package main

import "time"

// The JSON that -json writes. Its keys are stable so that runs of different
// versions can be compared: a figure that was not measured (its phase timed
// out or did not run) is null, never missing. Times are in seconds, memory
// in bytes; the times and ratios over rounds are medians, each ratio the
// median of the rounds' ratios (each operator time over its own round's
// floor, interpolated in time to the operator time's middle between the
// floor measured before the round's phases and the one after them), as in
// the table. Ratios from versions that measured the floors before the
// phases only compare with floors_before, not with these.

// runJSON is the whole run: the figures at one N (the only N, or the
// curve's largest) at the top level, and every N's in curve.
type runJSON struct {
	Timestamp time.Time `json:"timestamp"`
	// Machine is what the table prints: CPUs, model, memory, Go, OS.
	Machine        string   `json:"machine"`
	ManagerFlags   []string `json:"manager_flags"`
	ManagerEnv     []string `json:"manager_env,omitempty"`
	HarnessWorkers int      `json:"harness_workers"`
	// APIServerConsistencyChecks is whether kube-apiserver ran its
	// watch-cache consistency checks (-apiserver-consistency-checks).
	APIServerConsistencyChecks bool `json:"apiserver_consistency_checks"`
	figuresJSON
	// Curve has every N measured, ascending: one entry without -curve.
	Curve []figuresJSON `json:"curve"`
	// Growth compares the curve's smallest N with its largest; null with
	// fewer than two.
	Growth *growthJSON `json:"growth"`
}

// figuresJSON is what was measured at one N.
type figuresJSON struct {
	N int `json:"n"`
	// Rounds is how many were measured: fewer than -rounds after a timeout.
	Rounds            int      `json:"rounds"`
	Timeouts          []string `json:"timeouts"`
	LoadAverageBefore string   `json:"load_average_before"`
	LoadAverageAfter  string   `json:"load_average_after"`
	ElapsedS          float64  `json:"elapsed_s"`

	// Floors, made with a bare client: convergence's bare and with each
	// Rendered Event; fan-out's bare (the ConfigMap updates) and with the
	// status patch of each Persona (a fan-out writes no Event per Persona).
	// Each round measures them before its phases and after them; each
	// figure here is interpolated in time to the middle of the operator
	// time it stands beside: convergence's, the PromptLayer fan-out's, the
	// ClusterPromptLayer's, the parent's and the PromptPlatform's.
	ConvergenceFloorS         float64 `json:"convergence_floor_s"`
	ConvergenceEventsFloorS   float64 `json:"convergence_events_floor_s"`
	FanOutFloorS              float64 `json:"fanout_floor_s"`
	FanOutStatusFloorS        float64 `json:"fanout_status_floor_s"`
	ClusterFanOutFloorS       float64 `json:"cluster_fanout_floor_s"`
	ClusterFanOutStatusFloorS float64 `json:"cluster_fanout_status_floor_s"`
	ParentFanOutFloorS        float64 `json:"parent_fanout_floor_s"`
	ParentFanOutStatusFloorS  float64 `json:"parent_fanout_status_floor_s"`
	// The PromptPlatform's fan-outs: its create, an edit (platform_fanout)
	// and its delete.
	PlatformCreateFanOutFloorS       float64 `json:"platform_create_fanout_floor_s"`
	PlatformCreateFanOutStatusFloorS float64 `json:"platform_create_fanout_status_floor_s"`
	PlatformFanOutFloorS             float64 `json:"platform_fanout_floor_s"`
	PlatformFanOutStatusFloorS       float64 `json:"platform_fanout_status_floor_s"`
	PlatformDeleteFanOutFloorS       float64 `json:"platform_delete_fanout_floor_s"`
	PlatformDeleteFanOutStatusFloorS float64 `json:"platform_delete_fanout_status_floor_s"`
	// The floors as measured before the phases (what the *_floor_s keys
	// meant before the floors were measured twice) and after them, medians
	// over the rounds that measured them; after is zero when none did.
	FloorsBefore floorsJSON `json:"floors_before"`
	FloorsAfter  floorsJSON `json:"floors_after"`
	// The bare fan-out floors measured beside the fan-outs, with the
	// manager up and idle, medians over the rounds: the first before the
	// first fan-out, then one after each. Each fan-out's *_adjacent_floor_s
	// is interpolated between the one before it and the one after it.
	AdjacentFloorsS                    []float64 `json:"adjacent_floors_s"`
	FanOutAdjacentFloorS               float64   `json:"fanout_adjacent_floor_s"`
	ClusterFanOutAdjacentFloorS        float64   `json:"cluster_fanout_adjacent_floor_s"`
	ParentFanOutAdjacentFloorS         float64   `json:"parent_fanout_adjacent_floor_s"`
	PlatformCreateFanOutAdjacentFloorS float64   `json:"platform_create_fanout_adjacent_floor_s"`
	PlatformFanOutAdjacentFloorS       float64   `json:"platform_fanout_adjacent_floor_s"`
	PlatformDeleteFanOutAdjacentFloorS float64   `json:"platform_delete_fanout_adjacent_floor_s"`

	// The operator's times: fan-outs until every ConfigMap has its new
	// hash, and, "status", until every Persona's status has it too.
	ConvergenceS                *float64 `json:"convergence_s"`
	ConvergenceCreatesS         *float64 `json:"convergence_creates_s"`
	FanOutS                     *float64 `json:"fanout_s"`
	FanOutStatusS               *float64 `json:"fanout_status_s"`
	ClusterFanOutS              *float64 `json:"cluster_fanout_s"`
	ClusterFanOutStatusS        *float64 `json:"cluster_fanout_status_s"`
	ParentFanOutS               *float64 `json:"parent_fanout_s"`
	ParentFanOutStatusS         *float64 `json:"parent_fanout_status_s"`
	PlatformCreateFanOutS       *float64 `json:"platform_create_fanout_s"`
	PlatformCreateFanOutStatusS *float64 `json:"platform_create_fanout_status_s"`
	PlatformFanOutS             *float64 `json:"platform_fanout_s"`
	PlatformFanOutStatusS       *float64 `json:"platform_fanout_status_s"`
	PlatformDeleteFanOutS       *float64 `json:"platform_delete_fanout_s"`
	PlatformDeleteFanOutStatusS *float64 `json:"platform_delete_fanout_status_s"`

	ConvergenceRatio       *float64 `json:"convergence_ratio"`        // over convergence_floor_s
	ConvergenceEventsRatio *float64 `json:"convergence_events_ratio"` // over convergence_events_floor_s
	FanOutRatio            *float64 `json:"fanout_ratio"`             // fanout_s over fanout_floor_s
	// FanOutVsStatusFloorRatio is fanout_s over the floor with status at
	// the middle of fanout_s.
	FanOutVsStatusFloorRatio *float64 `json:"fanout_vs_status_floor_ratio"`
	FanOutStatusRatio        *float64 `json:"fanout_status_ratio"` // fanout_status_s over fanout_status_floor_s
	// FanOutLeastRatio is fanout_status_floor_s over fanout_floor_s: no
	// operator that makes the status writes can do better.
	FanOutLeastRatio                *float64 `json:"fanout_least_ratio"`
	ClusterFanOutRatio              *float64 `json:"cluster_fanout_ratio"` // over cluster_fanout_floor_s: the same writes as fan-out's
	ClusterFanOutVsStatusFloorRatio *float64 `json:"cluster_fanout_vs_status_floor_ratio"`
	ClusterFanOutStatusRatio        *float64 `json:"cluster_fanout_status_ratio"`
	ParentFanOutRatio               *float64 `json:"parent_fanout_ratio"` // over parent_fanout_floor_s: the same writes as fan-out's
	ParentFanOutStatusRatio         *float64 `json:"parent_fanout_status_ratio"`
	// Each fan-out's ConfigMaps over the bare floor measured beside it
	// (*_adjacent_floor_s).
	FanOutAdjacentRatio               *float64 `json:"fanout_adjacent_ratio"`
	ClusterFanOutAdjacentRatio        *float64 `json:"cluster_fanout_adjacent_ratio"`
	ParentFanOutAdjacentRatio         *float64 `json:"parent_fanout_adjacent_ratio"`
	PlatformCreateFanOutAdjacentRatio *float64 `json:"platform_create_fanout_adjacent_ratio"`
	PlatformFanOutAdjacentRatio       *float64 `json:"platform_fanout_adjacent_ratio"`
	PlatformDeleteFanOutAdjacentRatio *float64 `json:"platform_delete_fanout_adjacent_ratio"`
	// Each over its own floors, as cluster_fanout's.
	PlatformCreateFanOutRatio              *float64 `json:"platform_create_fanout_ratio"`
	PlatformCreateFanOutVsStatusFloorRatio *float64 `json:"platform_create_fanout_vs_status_floor_ratio"`
	PlatformCreateFanOutStatusRatio        *float64 `json:"platform_create_fanout_status_ratio"`
	PlatformFanOutRatio                    *float64 `json:"platform_fanout_ratio"`
	PlatformFanOutVsStatusFloorRatio       *float64 `json:"platform_fanout_vs_status_floor_ratio"`
	PlatformFanOutStatusRatio              *float64 `json:"platform_fanout_status_ratio"`
	PlatformDeleteFanOutRatio              *float64 `json:"platform_delete_fanout_ratio"`
	PlatformDeleteFanOutVsStatusFloorRatio *float64 `json:"platform_delete_fanout_vs_status_floor_ratio"`
	PlatformDeleteFanOutStatusRatio        *float64 `json:"platform_delete_fanout_status_ratio"`

	// Per Persona: convergence_s and fanout_s over n.
	ConvergencePerPersonaS *float64 `json:"convergence_per_persona_s"`
	FanOutPerPersonaS      *float64 `json:"fanout_per_persona_s"`

	// The managers' peak RSS (VmHWM), the highest of the rounds, before
	// the webhook samples; the baseline is their RSS once started and
	// settled with no Persona; per Persona is the peak less the baseline,
	// over n.
	PeakRSSBytes       int64   `json:"peak_rss_bytes"`
	BaselineRSSBytes   int64   `json:"baseline_rss_bytes"`
	RSSPerPersonaBytes float64 `json:"rss_per_persona_bytes"`

	// The last round's manager's renders, before the webhook samples;
	// render failures of every round.
	Renders        float64  `json:"renders"`
	RenderTotalS   float64  `json:"render_total_s"`
	RenderP50S     *float64 `json:"render_p50_s"`
	RenderP99S     *float64 `json:"render_p99_s"`
	RenderFailures float64  `json:"render_failures"`
	// The admission requests the webhooks of every manager turned away at
	// their bounds, in all and by "webhook/reason".
	WebhookTurnedAway   float64            `json:"webhook_turned_away"`
	WebhookTurnedAwayBy map[string]float64 `json:"webhook_turned_away_by"`

	// The manager's API writes while nothing changes.
	SteadyWindowS        float64            `json:"steady_window_s"`
	SteadyWrites         float64            `json:"steady_writes"`
	SteadyWritesByMethod map[string]float64 `json:"steady_writes_by_method"`

	// Sequential Persona creates with the webhook and without it, and the
	// handler's own latency from the manager's histogram (its p99 is the
	// bucket's upper bound).
	WebhookSamples      int      `json:"webhook_samples"`
	WebhookOnP50S       float64  `json:"webhook_on_p50_s"`
	WebhookOffP50S      float64  `json:"webhook_off_p50_s"`
	WebhookOnP99S       float64  `json:"webhook_on_p99_s"`
	WebhookOffP99S      float64  `json:"webhook_off_p99_s"`
	WebhookHandlerMeanS float64  `json:"webhook_handler_mean_s"`
	WebhookHandlerP99S  *float64 `json:"webhook_handler_p99_s"`

	// Sequential creates of labelled pods with the pod injection, of a
	// Persona with a canary in flight with it, and without it.
	InjectOnSamples     int     `json:"inject_on_samples"`
	InjectOnP50S        float64 `json:"inject_on_p50_s"`
	InjectOnP99S        float64 `json:"inject_on_p99_s"`
	InjectCanarySamples int     `json:"inject_canary_samples"`
	InjectCanaryP50S    float64 `json:"inject_canary_p50_s"`
	InjectCanaryP99S    float64 `json:"inject_canary_p99_s"`
	InjectOffSamples    int     `json:"inject_off_samples"`
	InjectOffP50S       float64 `json:"inject_off_p50_s"`
	InjectOffP99S       float64 `json:"inject_off_p99_s"`
	// What 2,000 more labelled pods added to the manager's live heap,
	// read after a forced collection (the target), and to its RSS.
	InjectLiveHeapGrowthBytes int64 `json:"inject_live_heap_growth_bytes"`
	InjectRSSGrowthBytes      int64 `json:"inject_rss_growth_bytes"`

	// The restart phase (report_restart.go).
	restartJSON
}

// floorsJSON is the floors of one turn, medians over the rounds: the
// fan-out's with status with the history of the round's first fan-out, and
// with that of its last.
type floorsJSON struct {
	ConvergenceS             float64 `json:"convergence_s"`
	ConvergenceEventsS       float64 `json:"convergence_events_s"`
	FanOutS                  float64 `json:"fanout_s"`
	FanOutStatusS            float64 `json:"fanout_status_s"`
	FanOutStatusLongHistoryS float64 `json:"fanout_status_long_history_s"`
}

// growthJSON is how the curve grows from its smallest N to its largest:
// each growth is the largest N's figure over the smallest N's.
type growthJSON struct {
	SmallestN                   int      `json:"smallest_n"`
	LargestN                    int      `json:"largest_n"`
	ConvergencePerPersonaGrowth *float64 `json:"convergence_per_persona_growth"`
	FanOutPerPersonaGrowth      *float64 `json:"fanout_per_persona_growth"`
	// The floors' growth per Persona, as measured before the rounds'
	// phases: convergence's with the Rendered Events, and fan-out's bare
	// updates.
	ConvergenceFloorGrowth   *float64 `json:"convergence_floor_per_persona_growth"`
	FanOutFloorGrowth        *float64 `json:"fanout_floor_per_persona_growth"`
	RSSPerPersonaGrowth      *float64 `json:"rss_per_persona_growth"`
	GrowthTarget             float64  `json:"growth_target"`
	LargestPeakRSSBytes      int64    `json:"largest_peak_rss_bytes"`
	PeakRSSTargetBytes       int64    `json:"peak_rss_target_bytes"`
	SteadyWritesZeroAtEveryN bool     `json:"steady_writes_zero_at_every_n"`
}
