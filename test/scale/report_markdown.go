package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// markdown is the report: the table, then the conditions of the run and
// where the time went.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## persona-operator at scale: N=%d\n\n", r.opts.n)
	writeTable(&b, r.rows())
	b.WriteString("\nEach round (the table above gives their medians), its floors as measured before → after its phases:\n\n")
	writeTable(&b, r.roundRows())
	r.writeConditions(&b)
	r.writeBreakdown(&b)
	return b.String()
}

// consistencyChecksCondition says whether kube-apiserver ran its
// watch-cache consistency checks.
func (r *report) consistencyChecksCondition() string {
	if r.opts.consistencyChecks {
		return "its watch-cache consistency checks on, as it ships (-apiserver-consistency-checks): every 5 to 7.5 minutes each resource's lists it whole from etcd, in whichever window is running"
	}
	return "its watch-cache consistency checks off (--feature-gates=" + consistencyChecksOff + "), which would list each resource whole from etcd every 5 to 7.5 minutes, in whichever window is running"
}

// writeConditions writes what was measured how, and on what machine.
func (r *report) writeConditions(b *strings.Builder) {
	n := r.opts.n
	fmt.Fprintf(b, "\n- machine: %s; load average %s before, %s after\n", r.machine, r.loadBefore, r.loadAfter)
	fmt.Fprintf(b, "- N=%d, harness workers %d, harness client QPS %d / burst %d (not throttled); webhook: %d creates on and %d off, in %d blocks alternating on/off, each after %d uncounted creates\n",
		n, r.opts.workers, harnessQPS, harnessBurst, len(r.webhookOn), len(r.webhookOff), webhookBlocks, webhookWarmCreates)
	fmt.Fprintf(b, "- manager flags: %s (defaults otherwise; see cmd/main.go)\n", strings.Join(r.managerFlags, " "))
	if len(r.opts.managerEnv) > 0 {
		fmt.Fprintf(b, "- the manager's environment adds: %s\n", strings.Join(r.opts.managerEnv, " "))
	}
	fmt.Fprintf(b, "- kube-apiserver: %s; it collects its garbage before each floor, each floor beside a fan-out, the convergence and each fan-out, and each of them starts once it has\n", r.consistencyChecksCondition())
	fmt.Fprintf(b, "- %d rounds, each measuring its floors, then the operator with a manager of its own, then (unless it timed out) its floors again once that manager has stopped; "+
		"each operator time stands beside its floors interpolated linearly in time to its middle (the API server's heap grows through a round, and its garbage collection with it); "+
		"the last round measures the steady state before its manager stops, and the webhook with a manager started again after its floors; ", len(r.rounds))
	fmt.Fprintf(b, "floors, measured without the webhook, with %d workers of the same client: convergence = create the layers, the parent and %d Personas + create each ConfigMap + patch each status; "+
		"fan-out = update the %d ConfigMaps; \"with Events\" and \"with status\" add the other writes personas.md#conditions requires: for convergence each Rendered Event, for fan-out each status patch (a fan-out writes no Event per Persona)\n", r.opts.workers, n, n)
	fmt.Fprintf(b, "- each fan-out's ConfigMaps also stand beside the bare fan-out floor measured beside them, with the manager up and idle: %d ConfigMaps of the same data, in a namespace of their own, "+
		"without the operator's labels and owner (no watch of the manager selects them), updated by the same client before the first fan-out and once each fan-out has settled, %s before the next; "+
		"each fan-out's is interpolated between the one before it and the one after it\n", n, adjacentFloorRest)
	fmt.Fprintf(b, "- convergence and fan-out end when the last Persona is Ready / ConfigMap has its new hash, as seen by a watch (cheaper than listing %d rendered objects every 200 ms; the ConfigMaps' watch carries their metadata only, the content-hash annotation included)\n", n)
	fmt.Fprintf(b, "- every round creates a ClusterPromptLayer selecting its namespace by a label before convergence; the ClusterPromptLayer fan-out edits its template, the Persona parent fan-out then the extension of the Persona every measured Persona inherits; then the PromptPlatform fan-outs create the cluster's PromptPlatform, edit the section it replaces and delete it, each re-rendering every Persona; each ends when every ConfigMap has the hash rendered offline, and stands beside the fan-out floors, which make the same writes\n")
	fmt.Fprintf(b, "- run took %s; manager log: %s\n", r.elapsed.Round(time.Second), r.logPath)
	if len(r.profiles) > 0 {
		sort.Strings(r.profiles)
		fmt.Fprintf(b, "- CPU profiles of the first %d s of each phase, and heap profiles of the manager as each ends (go tool pprof -top FILE): %s\n", r.opts.profileSeconds, strings.Join(r.profiles, ", "))
	}
	for _, err := range r.profileErrors {
		fmt.Fprintf(b, "- profile missing: %v\n", err)
	}
	if creates := median(mapRounds(r.rounds, convergenceCreatesOf)); creates > 0 {
		fmt.Fprintf(b, "- convergence: the harness's creates (through the webhook) took %s of it (median)\n", secs(creates))
	}
	fmt.Fprintf(b, "- the steady state window starts once the manager has written nothing for %s\n", settleQuiet)
	r.restartNotes(b)
}

// writeTable writes rows as a Markdown table, columns padded.
func writeTable(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	line := func(cells []string) {
		b.WriteString("|")
		for i, cell := range cells {
			fmt.Fprintf(b, " %s%s |", cell, strings.Repeat(" ", widths[i]-len([]rune(cell))))
		}
		b.WriteString("\n")
	}
	line(rows[0])
	sep := make([]string, len(widths))
	for i, w := range widths {
		sep[i] = strings.Repeat("-", w)
	}
	line(sep)
	for _, row := range rows[1:] {
		line(row)
	}
}
