package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/persona-operator/persona-operator/test/scrape"
)

// rows is the table: each measure beside its floor and its target.
func (r *report) rows() [][]string {
	rows := [][]string{{"measure", "operator", "floor", "ratio", "target", "met?"}}
	rows = append(rows, r.timeRows()...)
	rows = append(rows, r.steadyRow())
	rows = append(rows, r.restartRows()...)
	rows = append(rows, r.webhookRows()...)
	return append(rows, r.managerRows()...)
}

// timeRows are convergence's and fan-out's times against their floors,
// with the targets of the delivery-first contract: a fan-out's ConfigMaps
// near the bare updates, and everything personas.md#conditions requires
// near the floor that writes exactly that.
func (r *report) timeRows() [][]string {
	n := r.opts.n
	rows := [][]string{
		ratioRow(fmt.Sprintf("convergence: create %d Personas → all Ready", n), r.rounds, convergenceOf, convergenceFloorOf, convergenceTimeoutOf, noTarget),
		ratioRow("  … against the floor with each Rendered Event (the writes personas.md#conditions requires)", r.rounds, convergenceOf, convergenceSpecFloorOf, convergenceTimeoutOf, requiredWritesTarget),
	}
	if slices.ContainsFunc(r.rounds, func(rr *roundResult) bool { return rr.convergenceTimeout != "" }) {
		return append(rows, []string{"fan-out", "not run (convergence timed out)", "", "", "", ""})
	}
	rows = append(rows, r.fanOutRows("PromptLayer", layerFanOut)...)
	rows = append(rows, leastRow("least any operator can reach: the floor with each status patch against the bare floor", r.rounds))
	if slices.ContainsFunc(r.rounds, func(rr *roundResult) bool { return rr.fanOut.timeout != "" }) {
		return append(rows, []string{"ClusterPromptLayer fan-out", "not run (the PromptLayer fan-out timed out)", "", "", "", ""})
	}
	// The same floors as the PromptLayer's (the same writes), at its own moment.
	rows = append(rows, r.fanOutRows("ClusterPromptLayer", clusterFanOut)...)
	if slices.ContainsFunc(r.rounds, func(rr *roundResult) bool { return rr.clusterFanOut.timeout != "" }) {
		return append(rows, []string{"Persona parent fan-out", "not run (the ClusterPromptLayer fan-out timed out)", "", "", "", ""})
	}
	rows = append(rows, r.fanOutRows("Persona parent", parentFanOut)...)
	// The PromptPlatform's, in the order they run, each after the one before.
	notRunAfter := "the Persona parent fan-out"
	ranBefore := parentFanOut.timeout
	for _, p := range []struct {
		name, action string
		m            fanOutMeasure
	}{
		{platformCreatePhase, "create the PromptPlatform", platformCreateFanOut},
		{platformEditPhase, "edit the PromptPlatform", platformEditFanOut},
		{platformDeletePhase, "delete the PromptPlatform", platformDeleteFanOut},
	} {
		if slices.ContainsFunc(r.rounds, func(rr *roundResult) bool { return ranBefore(rr) != "" }) {
			return append(rows, []string{p.name, fmt.Sprintf("not run (%s timed out)", notRunAfter), "", "", "", ""})
		}
		rows = append(rows, r.fanOutRowsOf(p.action, p.m)...)
		notRunAfter, ranBefore = "the "+p.name, p.m.timeout
	}
	return rows
}

// fanOutRows are the fan-out of an edit of one object of kind: until every
// ConfigMap has its new content, against the bare updates of the brackets
// and against those measured beside it, and until every status is current
// too, against the floor with each status patch.
func (r *report) fanOutRows(kind string, m fanOutMeasure) [][]string {
	return r.fanOutRowsOf("edit 1 "+kind, m)
}

// fanOutRowsOf are fanOutRows of a fan-out that action starts.
func (r *report) fanOutRowsOf(action string, m fanOutMeasure) [][]string {
	n := r.opts.n
	return [][]string{
		ratioRow(fmt.Sprintf("fan-out: %s → %d ConfigMaps updated", action, n), r.rounds, m.configMaps, m.floor, m.timeout, deliveryTarget),
		ratioRow("  … against the bare updates measured beside it, the manager up and idle", r.rounds, m.configMaps, m.adjacentFloor, m.timeout, deliveryTarget),
		ratioRow("  … until every status is current, against the floor with each status patch", r.rounds, m.statuses, m.specFloor, m.timeout, fanOutWritesTarget(n)),
	}
}

// steadyRow is the manager's writes in the steady state, by method.
func (r *report) steadyRow() []string {
	writes, byMethod := r.steadyWriteCounts()
	var methods []string
	for m, v := range byMethod {
		methods = append(methods, fmt.Sprintf("%s %.0f", m, v))
	}
	sort.Strings(methods)
	steadyDesc := fmt.Sprintf("%.0f", writes)
	if len(methods) > 0 {
		steadyDesc += " (" + strings.Join(methods, ", ") + ")"
	}
	return []string{fmt.Sprintf("steady state: manager API writes in %s", r.opts.steady), steadyDesc, "0", "—", "0", yesNo(writes == 0)}
}

// steadyWriteCounts are the manager's writes in the steady state, in all
// and by method, without its reads.
func (r *report) steadyWriteCounts() (total float64, byMethod map[string]float64) {
	byMethod = map[string]float64{}
	for m, v := range r.steadyWrites {
		if isWrite(m) {
			total += v
			byMethod[m] = v
		}
	}
	return total, byMethod
}

// webhookRows are the create latencies with the webhook against without
// it, and the handler's own.
func (r *report) webhookRows() [][]string {
	on, off := r.webhookOn, r.webhookOff
	added99 := on.quantile(0.99) - off.quantile(0.99)
	injectAdded99 := r.injectOn.quantile(0.99) - r.injectOff.quantile(0.99)
	canaryAdded99 := r.injectCanary.quantile(0.99) - r.injectOff.quantile(0.99)
	wh := r.webhookHandler
	return [][]string{
		{fmt.Sprintf("Persona create p50, webhook on vs off (%d + %d sequential)", len(on), len(off)), ms(on.quantile(0.5)), ms(off.quantile(0.5)),
			signedMs(on.quantile(0.5) - off.quantile(0.5)), "—", "—"},
		{"Persona create p99, webhook on vs off", ms(on.quantile(0.99)), ms(off.quantile(0.99)),
			signedMs(added99), "≤ +10 ms", yesNo(added99 <= webhookP99AddedLimit)},
		{"webhook handler alone (server side): mean; p99 within", fmt.Sprintf("%s; ≤ %s", msF(wh.Sum/max(wh.Count, 1)), msF(wh.BucketOf(0.99))), "—", "—", "—", "—"},
		{fmt.Sprintf("labelled pod create p50, injection on vs off (%d + %d sequential)", len(r.injectOn), len(r.injectOff)), ms(r.injectOn.quantile(0.5)), ms(r.injectOff.quantile(0.5)),
			signedMs(r.injectOn.quantile(0.5) - r.injectOff.quantile(0.5)), "—", "—"},
		{"labelled pod create p99, injection on vs off", ms(r.injectOn.quantile(0.99)), ms(r.injectOff.quantile(0.99)),
			signedMs(injectAdded99), "≤ +10 ms", yesNo(injectAdded99 <= webhookP99AddedLimit)},
		{fmt.Sprintf("labelled pod create p50, a canary in flight vs injection off (%d + %d sequential)", len(r.injectCanary), len(r.injectOff)),
			ms(r.injectCanary.quantile(0.5)), ms(r.injectOff.quantile(0.5)),
			signedMs(r.injectCanary.quantile(0.5) - r.injectOff.quantile(0.5)), "—", "—"},
		{"labelled pod create p99, a canary in flight vs injection off", ms(r.injectCanary.quantile(0.99)), ms(r.injectOff.quantile(0.99)),
			signedMs(canaryAdded99), "≤ +10 ms", yesNo(canaryAdded99 <= webhookP99AddedLimit)},
		{fmt.Sprintf("manager live heap growth with %d more labelled pods, after a forced collection", labelledPods), mib(r.injectLiveHeapGrowth), "—", "—", "≤ 20 MiB", yesNo(r.injectLiveHeapGrowth <= injectHeapLimit)},
		{fmt.Sprintf("manager RSS growth with %d more labelled pods", labelledPods), mib(r.injectRSSGrowth), "—", "—", "—", "—"},
	}
}

// managerRows are the managers' memory, renders and render failures.
func (r *report) managerRows() [][]string {
	h := r.final.Histogram("persona_render_duration_seconds", nil)
	failures := r.renderFailures
	return [][]string{
		{"manager peak RSS (VmHWM), highest of the rounds, before the webhook samples", mib(r.peakRSS), "—", "—", "—", "—"},
		{"renders of the last round's manager, before the webhook samples: count, total time", fmt.Sprintf("%.0f, %.2f s", h.Count, h.Sum), "—", "—", "—", "—"},
		{"render duration p50 / p99 (from buckets)", fmt.Sprintf("%s / %s", msF(h.Quantile(0.5)), msF(h.Quantile(0.99))), "—", "—", "≤ 250 ms budget", yesNo(h.Count > 0 && h.Quantile(0.99) <= 0.25)},
		{"render failures (persona_render_failures_total), every round", fmt.Sprintf("%.0f", failures), "—", "—", "0", yesNo(failures == 0)},
		{"admission requests the webhooks turned away at their bounds (persona_webhook_requests_turned_away_total), every manager", turnedAwayText(r.turnedAway), "—", "—", "—", "—"},
	}
}

// roundRows is a table of every round's floors, before and after its
// phases, and its times, each ratio against its floors interpolated to it.
func (r *report) roundRows() [][]string {
	rows := [][]string{{"round", "convergence floor", "… with Events", "fan-out floor", "… with status", fmt.Sprintf("… with %d revisions", longestFloorHistory), "convergence", "ratio", "fan-out", "ratio",
		"statuses current", "ratio", "ClusterPromptLayer fan-out", "ratio", "parent fan-out", "ratio", "PromptPlatform fan-out", "ratio",
		"fan-out floors beside the fan-outs"}}
	ratio := func(rr *roundResult, op, floor func(*roundResult) time.Duration) string {
		if op(rr) <= 0 || floor(rr) <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f×", op(rr).Seconds()/floor(rr).Seconds())
	}
	for i, rr := range r.rounds {
		f := &rr.floors
		rows = append(rows, []string{fmt.Sprint(i + 1), f.convergence.String(), f.convergenceSpec.String(), f.fanOut.String(), f.fanOutSpec.String(), f.fanOutSpecLong.String(),
			secs(rr.convergence), ratio(rr, convergenceOf, convergenceFloorOf),
			secs(rr.fanOut.configMaps), ratio(rr, layerFanOut.configMaps, layerFanOut.floor),
			secs(rr.fanOut.statuses), ratio(rr, layerFanOut.statuses, layerFanOut.specFloor),
			secs(rr.clusterFanOut.configMaps), ratio(rr, clusterFanOut.configMaps, clusterFanOut.floor),
			secs(rr.parentFanOut.configMaps), ratio(rr, parentFanOut.configMaps, parentFanOut.floor),
			secs(rr.platformEdit.configMaps), ratio(rr, platformEditFanOut.configMaps, platformEditFanOut.floor),
			adjacentText(f.adjacent[:])})
	}
	return rows
}

// adjacentText is a round's adjacent floors in the order measured, in
// seconds; — when it measured none.
func adjacentText(floors []timed) string {
	var out []string
	for _, t := range floors {
		if t.took > 0 {
			out = append(out, fmt.Sprintf("%.2f", t.took.Seconds()))
		}
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

func isWrite(method string) bool {
	for _, m := range scrape.WriteMethods {
		if m == method {
			return true
		}
	}
	return false
}
