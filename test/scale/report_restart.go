package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// restartJSON is the restart phase's figures in the JSON, null when it did
// not run (-restarts 0). Times are medians over the restarts; the counts
// are totals over them.
type restartJSON struct {
	Restarts int `json:"restart_count"`
	// The time from the new process's start until an edit made at that
	// moment is in its ConfigMap, the floor (a bare client's list of every
	// kind the manager caches) and the median of the restarts' ratios.
	RestartEditS      *float64 `json:"restart_edit_s"`
	RestartListFloorS *float64 `json:"restart_list_floor_s"`
	RestartEditRatio  *float64 `json:"restart_edit_ratio"`
	RestartEditTarget float64  `json:"restart_edit_target"`
	// The same time beside a second floor: caches of the harness's own
	// starting and syncing an informer of each kind the manager caches,
	// with the same client-go informers; and the median of those ratios.
	RestartInformerFloorS *float64 `json:"restart_informer_floor_s"`
	RestartInformerRatio  *float64 `json:"restart_informer_ratio"`
	// Where the edit's time went, from the same start: until the new
	// process's webhook served, and until the API server accepted the edit.
	RestartWebhookServingS *float64 `json:"restart_webhook_serving_s"`
	RestartEditAcceptedS   *float64 `json:"restart_edit_accepted_s"`
	// The objects nothing changed that were written during the restarts
	// (watched), and the Personas whose Ready read other than True.
	RestartUnchangedWrites *int `json:"restart_unchanged_writes"`
	RestartReadyFlips      *int `json:"restart_ready_flips"`
	// The new process's API writes until it settled, the edit's included:
	// the median of the restarts' totals.
	RestartManagerWrites *float64 `json:"restart_manager_writes"`
	// The new processes' peak RSS (VmHWM) once settled, the highest of the
	// restarts.
	RestartPeakRSSBytes *int64 `json:"restart_peak_rss_bytes"`
}

// Each restart's times, for the table and the JSON.
var (
	restartEditOf  = func(r *restartResult) time.Duration { return r.edit }
	restartFloorOf = func(r *restartResult) time.Duration { return r.floor }
)

func (r *report) restartFigures() restartJSON {
	rs := r.restarts
	out := restartJSON{Restarts: len(rs), RestartEditTarget: restartTarget}
	if len(rs) == 0 {
		return out
	}
	edits, floors, ratios := r.restartTimes()
	out.RestartEditS = new(median(edits).Seconds())
	out.RestartListFloorS = new(median(floors).Seconds())
	out.RestartEditRatio = new(median(ratios))
	informerFloors, informerRatios := r.restartInformerTimes()
	out.RestartInformerFloorS, out.RestartInformerRatio = new(median(informerFloors).Seconds()), new(median(informerRatios))
	var serving, accepted []time.Duration
	for _, rr := range rs {
		serving, accepted = append(serving, rr.serving), append(accepted, rr.accepted)
	}
	out.RestartWebhookServingS, out.RestartEditAcceptedS = new(median(serving).Seconds()), new(median(accepted).Seconds())
	changed, flips := r.restartCounts()
	out.RestartUnchangedWrites, out.RestartReadyFlips = new(changed), new(flips)
	out.RestartManagerWrites = new(median(r.restartManagerWrites()))
	out.RestartPeakRSSBytes = new(r.restartPeakRSS())
	return out
}

// restartPeakRSS is the highest peak RSS of the restarts' new processes.
func (r *report) restartPeakRSS() int64 {
	var peak int64
	for _, rr := range r.restarts {
		peak = max(peak, rr.peakRSS)
	}
	return peak
}

func (r *report) restartTimes() (edits, floors []time.Duration, ratios []float64) {
	for _, rr := range r.restarts {
		edits, floors = append(edits, restartEditOf(rr)), append(floors, restartFloorOf(rr))
		ratios = append(ratios, rr.edit.Seconds()/rr.floor.Seconds())
	}
	return edits, floors, ratios
}

func (r *report) restartInformerTimes() (floors []time.Duration, ratios []float64) {
	for _, rr := range r.restarts {
		if rr.informerFloor == 0 {
			continue // not measured
		}
		floors = append(floors, rr.informerFloor)
		ratios = append(ratios, rr.edit.Seconds()/rr.informerFloor.Seconds())
	}
	return floors, ratios
}

func (r *report) restartCounts() (changed, flips int) {
	for _, rr := range r.restarts {
		changed += len(rr.changed)
		flips += len(rr.flips)
	}
	return changed, flips
}

func (r *report) restartManagerWrites() []float64 {
	var out []float64
	for _, rr := range r.restarts {
		var total float64
		for _, v := range rr.managerWrites {
			total += v
		}
		out = append(out, total)
	}
	return out
}

// restartRows are the restart phase's rows of the table, none when it did
// not run.
func (r *report) restartRows() [][]string {
	if len(r.restarts) == 0 {
		return nil
	}
	k, n := len(r.restarts), r.opts.n
	changed, flips := r.restartCounts()
	var examples []string
	for _, rr := range r.restarts {
		examples = append(examples, rr.changed...)
		examples = append(examples, rr.flips...)
	}
	slices.Sort(examples)
	changedDesc := fmt.Sprint(changed)
	if len(examples) > 0 {
		changedDesc += " (e.g. " + strings.Join(examples[:min(3, len(examples))], ", ") + ")"
	}
	edits, floors, ratios := r.restartTimes()
	ratio := median(ratios)
	ratioDesc := rangeDesc(ratios)
	informerFloors, informerRatios := r.restartInformerTimes()
	return [][]string{
		{fmt.Sprintf("restart: kill the manager at %d Personas, start a new one (%d times): objects written that nothing changed (watched)", n, k), changedDesc, "0", "—", "0", yesNo(changed == 0)},
		{"  … Personas whose Ready flipped", fmt.Sprint(flips), "0", "—", "0", yesNo(flips == 0)},
		{"  … the new process's start → an edit made then is in its ConfigMap, against a bare list of every kind the manager caches",
			secs(median(edits)), secs(median(floors)), ratioDesc, fmt.Sprintf("≤ %.1f×", restartTarget), yesNo(ratio <= restartTarget)},
		{"  … the same, against caches of the harness's own starting and syncing an informer of each of those kinds",
			secs(median(edits)), secs(median(informerFloors)), rangeDesc(informerRatios), "—", "—"},
		{"  … the new process's API writes until it settled, the edit's included (median)", writesDesc(r.restarts[len(r.restarts)-1].managerWrites, median(r.restartManagerWrites())), "—", "—", "—", "—"},
		{"  … the new process's peak RSS (VmHWM) once it settled, highest of the restarts", mib(r.restartPeakRSS()), "—", "—", "—", "—"},
	}
}

// rangeDesc is the median of ratios, with their range when there are several.
func rangeDesc(ratios []float64) string {
	desc := fmt.Sprintf("%.2f×", median(ratios))
	if len(ratios) > 1 {
		desc += fmt.Sprintf(" (%.2f–%.2f)", slices.Min(ratios), slices.Max(ratios))
	}
	return desc
}

// writesDesc is a total, with the last restart's writes by method.
func writesDesc(byMethod map[string]float64, total float64) string {
	var methods []string
	for m, v := range byMethod {
		methods = append(methods, fmt.Sprintf("%s %.0f", m, v))
	}
	sort.Strings(methods)
	desc := fmt.Sprintf("%.0f", total)
	if len(methods) > 0 {
		desc += " (last: " + strings.Join(methods, ", ") + ")"
	}
	return desc
}

// restartNotes say how the restart phase measures, when it ran.
func (r *report) restartNotes(b io.Writer) {
	if len(r.restarts) == 0 {
		return
	}
	fmt.Fprintf(b, "- restart: after the last round's floors, with a manager started again and settled, %d times: SIGKILL the manager; "+
		"list at once with the harness's client every kind the manager caches (the floor: Personas, PromptLayers, ClusterPromptLayers, PromptPlatforms, Namespaces, "+
		"the metadata of the operator's ConfigMaps and of the template sources), then start and sync caches of the harness's own with an informer of each (the informer floor); start a new manager and, at that moment, edit Persona %s's prompt, "+
		"retried every 10 ms while the webhook is down; the edit's time ends when a watch sees the ConfigMap hold it; "+
		"watches from before the kill until the new manager settled (%s without a write) count every other Persona, PromptLayer, ConfigMap, Event and "+
		"ClusterPromptLayer written, and every Persona whose Ready read other than True\n", len(r.restarts), restartEdited, settleQuiet)
}
