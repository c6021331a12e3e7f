package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/persona-operator/persona-operator/test/scrape"
)

// writeBreakdown writes where the time went in each phase of the last round.
func (r *report) writeBreakdown(b *strings.Builder) {
	fmt.Fprintf(b, "\nWhere the time went, per phase of the last round (CPU is each process's user+system time during the phase):\n\n")
	for _, ph := range r.phases {
		if ph.round == len(r.rounds) || ph.round == 0 {
			fmt.Fprintf(b, "- %s\n", ph.describe(r.opts.n))
		}
	}
}

// describe says what the processes did during the phase.
func (ph *phase) describe(n int) string {
	var b strings.Builder
	cores := float64(runtime.NumCPU())
	fmt.Fprintf(&b, "**%s** (%s): %s = %.0f%% of %d cores; other processes %.1fs, iowait %.1fs", ph.name, secs(ph.wall), ph.cpu,
		100*ph.cpu.total().Seconds()/(ph.wall.Seconds()*cores), runtime.NumCPU(), ph.cpu.others().Seconds(), ph.cpu.iowait.Seconds())
	if ph.cpu.others().Seconds() > 0.25*ph.wall.Seconds() {
		b.WriteString(" (**disturbed**: others used over a quarter of a core)")
	}
	if ph.apiserverRSS > 0 {
		fmt.Fprintf(&b, "; kube-apiserver's RSS at the start %d MiB", ph.apiserverRSS>>20)
	}
	if ph.managerPeakRSS > 0 {
		fmt.Fprintf(&b, "; the manager's peak RSS at the end %d MiB", ph.managerPeakRSS>>20)
	}
	if ph.before == nil || ph.after == nil {
		return b.String()
	}
	fmt.Fprintf(&b, "; manager requests: %s", requestCounts(ph.before, ph.after, ph.wall, 0))
	if ph.settled != nil {
		fmt.Fprintf(&b, "; until it settled (%s later, after %s without a write): %s", secs(ph.settleWait-settleQuiet), settleQuiet,
			requestCounts(ph.before, ph.settled, 0, n))
	}
	persona := map[string]string{"controller": "persona"}
	reconciles := ph.after.Sum("controller_runtime_reconcile_total", persona) - ph.before.Sum("controller_runtime_reconcile_total", persona)
	if reconciles > 0 {
		rt := ph.after.Histogram("controller_runtime_reconcile_time_seconds", persona).Minus(ph.before.Histogram("controller_runtime_reconcile_time_seconds", persona))
		workers := ph.after.Sum("controller_runtime_max_concurrent_reconciles", persona)
		render := ph.after.Histogram("persona_render_duration_seconds", nil).Minus(ph.before.Histogram("persona_render_duration_seconds", nil))
		queue := ph.after.Histogram("workqueue_queue_duration_seconds", persona).Minus(ph.before.Histogram("workqueue_queue_duration_seconds", persona))
		var results []string
		for _, result := range []string{"success", "requeue", "requeue_after", "error"} {
			by := map[string]string{"controller": "persona", "result": result}
			if d := ph.after.Sum("controller_runtime_reconcile_total", by) - ph.before.Sum("controller_runtime_reconcile_total", by); d > 0 {
				results = append(results, fmt.Sprintf("%s %.0f", result, d))
			}
		}
		fmt.Fprintf(&b, "; persona reconciles %.0f (%.2f per persona; %s), reconcile time %.1f s (mean %s, p99 %s) = %.0f%% of %.0f workers busy; renders %.0f taking %.1f s; mean queue wait %s",
			reconciles, reconciles/float64(n), strings.Join(results, ", "), rt.Sum, msF(rt.Sum/max(rt.Count, 1)), msF(rt.Quantile(0.99)),
			100*rt.Sum/(max(workers, 1)*ph.wall.Seconds()), workers, render.Count, render.Sum, msF(queue.Sum/max(queue.Count, 1)))
	}
	away := turnedAway(ph.after)
	for by, n := range turnedAway(ph.before) {
		away[by] -= n
	}
	if text := turnedAwayText(away); text != "0" {
		fmt.Fprintf(&b, "; admission requests turned away at the webhooks' bounds: %s", text)
	}
	if ph.throttled > 0 {
		fmt.Fprintf(&b, "; client-go logged %d client-side throttling waits over 1 s (longest %s)", ph.throttled, ph.maxThrottleWait.Round(10*time.Millisecond))
	}
	return b.String()
}

// requestCounts lists the manager's requests between two scrapes by
// method, with the write rate over wall, or per persona.
func requestCounts(before, after scrape.Snapshot, wall time.Duration, n int) string {
	b, a := before.Requests(), after.Requests()
	var out []string
	var writes float64
	for _, m := range []string{"GET", "LIST", "POST", "PUT", "PATCH", "DELETE"} {
		d := a[m] - b[m]
		if d <= 0 {
			continue
		}
		if isWrite(m) {
			writes += d
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%s %.0f (%.2f per persona)", m, d, d/float64(n)))
		} else {
			out = append(out, fmt.Sprintf("%s %.0f", m, d))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	if wall > 0 {
		return fmt.Sprintf("%s (%.0f writes/s)", strings.Join(out, ", "), writes/wall.Seconds())
	}
	return strings.Join(out, ", ")
}
