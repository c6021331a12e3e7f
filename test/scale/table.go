package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/persona-operator/persona-operator/test/scrape"
)

// Targets.
const (
	ratioTarget          = 1.5
	webhookP99AddedLimit = 10 * time.Millisecond
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
	// peakRSS is the highest of the managers' (one per round).
	peakRSS int64
	// final is the last manager's metrics; renderFailures sums every
	// manager's failures.
	final          scrape.Snapshot
	renderFailures float64

	phases []*phase
}

// phase is one timed step, with what the processes did during it.
type phase struct {
	name            string
	round           int
	procs           processes
	start           time.Time
	wall            time.Duration
	cpuBefore, cpu  cpuTimes
	before, after   scrape.Snapshot // the manager's metrics; nil before it runs
	settled         scrape.Snapshot // after the manager settled, when it was waited for
	settleWait      time.Duration
	throttled       int
	maxThrottleWait time.Duration
}

func (r *report) begin(name string, procs processes, before scrape.Snapshot) *phase {
	ph := &phase{name: name, round: r.round, procs: procs, start: time.Now(), cpuBefore: procs.cpu(), before: before}
	r.phases = append(r.phases, ph)
	if r.logPath != "" {
		if st, err := os.Stat(r.logPath); err == nil {
			r.logOffset = st.Size()
		}
	}
	return ph
}

func (r *report) end(ph *phase, after scrape.Snapshot) {
	ph.wall = time.Since(ph.start)
	ph.cpu = ph.procs.cpu().minus(ph.cpuBefore)
	ph.after = after
	if r.logPath != "" {
		ph.throttled, ph.maxThrottleWait = throttling(r.logPath, r.logOffset)
	}
}

func (r *report) beginManaged(name string, procs processes, metricsURL string) (*phase, error) {
	s, err := scrape.Get(context.Background(), metricsURL)
	if err != nil {
		return nil, err
	}
	return r.begin(name, procs, s), nil
}

func (r *report) endManaged(ctx context.Context, ph *phase, metricsURL string) error {
	s, err := scrape.Get(ctx, metricsURL)
	if err != nil {
		return err
	}
	r.end(ph, s)
	return nil
}

// settleManaged waits for the manager to settle after the phase, so that
// the phase's write totals include what trailed its measured end.
func (r *report) settleManaged(ctx context.Context, ph *phase, metricsURL string, quiet time.Duration) (err error) {
	if ph.settleWait, err = settle(ctx, metricsURL, quiet, settleLimit); err != nil {
		return err
	}
	ph.settled, err = scrape.Get(ctx, metricsURL)
	return err
}

var throttleDelay = regexp.MustCompile(`delay="([^"]+)"`)

// throttling counts the client-side throttling waits client-go logged
// (those over 1s are logged at the default level) after offset.
func throttling(path string, offset int64) (n int, maxWait time.Duration) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "client-side throttling") {
			continue
		}
		n++
		if m := throttleDelay.FindStringSubmatch(line); m != nil {
			if d, err := time.ParseDuration(m[1]); err == nil && d > maxWait {
				maxWait = d
			}
		}
	}
	return n, maxWait
}

func machineInfo() string {
	model := "unknown CPU"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				fmt.Sscan(v, &kb)
				mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s)%s, %s %s/%s", runtime.NumCPU(), model, mem, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func signedMs(d time.Duration) string {
	return fmt.Sprintf("%+.1f ms", float64(d)/float64(time.Millisecond))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// ratioRow summarizes one measure over the rounds: the medians of the
// operator's and the floor's times, and the median of the rounds' ratios
// (each operator time over the floor of its own round) with their range.
func ratioRow(measure string, rounds []*roundResult, operator, floor func(*roundResult) time.Duration, timeout func(*roundResult) string) []string {
	target := fmt.Sprintf("≤ %.1f×", ratioTarget)
	var ops, floors []time.Duration
	var ratios []float64
	for _, rr := range rounds {
		if t := timeout(rr); t != "" {
			return []string{measure, "timeout", secs(floor(rr)), "—", target, "**no** (timeout)"}
		}
		ops, floors = append(ops, operator(rr)), append(floors, floor(rr))
		if floor(rr) > 0 {
			ratios = append(ratios, operator(rr).Seconds()/floor(rr).Seconds())
		}
	}
	if len(ratios) == 0 {
		return []string{measure, secs(median(ops)), "—", "—", target, "—"}
	}
	ratio := median(ratios)
	desc := fmt.Sprintf("%.2f×", ratio)
	if len(ratios) > 1 {
		desc += fmt.Sprintf(" (%.2f–%.2f)", slices.Min(ratios), slices.Max(ratios))
	}
	return []string{measure, secs(median(ops)), secs(median(floors)), desc, target, yesNo(ratio <= ratioTarget)}
}

// leastRow is the ratio of fan-out's floors: the one that also makes the
// writes personas.md#conditions requires over the bare one, in the operator column. No
// operator that makes those writes can beat it, so it has no target.
func leastRow(measure string, rounds []*roundResult) []string {
	row := ratioRow(measure, rounds, func(rr *roundResult) time.Duration { return rr.fanOutSpecFloor },
		func(rr *roundResult) time.Duration { return rr.fanOutFloor }, func(*roundResult) string { return "" })
	row[4], row[5] = "—", "—"
	return row
}

// median is the middle value; of an even count, the mean of the middle two.
func median[T time.Duration | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// markdown is the report: the table, then the conditions of the run and
// where the time went.
func (r *report) markdown() string {
	var b strings.Builder
	n := r.opts.n
	fmt.Fprintf(&b, "\n## persona-operator at scale: N=%d\n\n", n)
	rows := [][]string{{"measure", "operator", "floor", "ratio", "target", "met?"}}
	convergence := func(rr *roundResult) time.Duration { return rr.convergence }
	convergenceTimeout := func(rr *roundResult) string { return rr.convergenceTimeout }
	fanOut := func(rr *roundResult) time.Duration { return rr.fanOut }
	fanOutTimeout := func(rr *roundResult) string { return rr.fanOutTimeout }
	rows = append(rows,
		ratioRow(fmt.Sprintf("convergence: create %d Personas → all Ready", n), r.rounds, convergence,
			func(rr *roundResult) time.Duration { return rr.convergenceFloor }, convergenceTimeout),
		ratioRow("  … against the floor with each Rendered Event (personas.md#conditions)", r.rounds, convergence,
			func(rr *roundResult) time.Duration { return rr.convergenceSpecFloor }, convergenceTimeout))
	if !slices.ContainsFunc(r.rounds, func(rr *roundResult) bool { return rr.convergenceTimeout != "" }) {
		rows = append(rows,
			ratioRow(fmt.Sprintf("fan-out: edit 1 PromptLayer → %d ConfigMaps updated", n), r.rounds, fanOut,
				func(rr *roundResult) time.Duration { return rr.fanOutFloor }, fanOutTimeout),
			ratioRow("  … against the floor with each status patch and Event", r.rounds, fanOut,
				func(rr *roundResult) time.Duration { return rr.fanOutSpecFloor }, fanOutTimeout),
			leastRow("  least any operator can reach: that floor against the bare floor", r.rounds))
	} else {
		rows = append(rows, []string{"fan-out", "not run (convergence timed out)", "", "", "", ""})
	}
	var writes float64
	var methods []string
	for m, v := range r.steadyWrites {
		if isWrite(m) {
			writes += v
			methods = append(methods, fmt.Sprintf("%s %.0f", m, v))
		}
	}
	sort.Strings(methods)
	steadyDesc := fmt.Sprintf("%.0f", writes)
	if len(methods) > 0 {
		steadyDesc += " (" + strings.Join(methods, ", ") + ")"
	}
	rows = append(rows, []string{fmt.Sprintf("steady state: manager API writes in %s", r.opts.steady), steadyDesc, "0", "—", "0", yesNo(writes == 0)})
	on, off := r.webhookOn, r.webhookOff
	added99 := on.quantile(0.99) - off.quantile(0.99)
	wh := r.webhookHandler
	rows = append(rows,
		[]string{fmt.Sprintf("Persona create p50, webhook on vs off (%d + %d sequential)", len(on), len(off)), ms(on.quantile(0.5)), ms(off.quantile(0.5)),
			signedMs(on.quantile(0.5) - off.quantile(0.5)), "—", "—"},
		[]string{"Persona create p99, webhook on vs off", ms(on.quantile(0.99)), ms(off.quantile(0.99)),
			signedMs(added99), "≤ +10 ms", yesNo(added99 <= webhookP99AddedLimit)},
		[]string{"webhook handler alone (server side): mean; p99 within", fmt.Sprintf("%s; ≤ %s", msF(wh.Sum/max(wh.Count, 1)), msF(wh.BucketOf(0.99))), "—", "—", "—", "—"},
		[]string{"manager peak RSS (VmHWM), highest of the rounds, before the webhook samples", fmt.Sprintf("%.0f MiB", float64(r.peakRSS)/(1<<20)), "—", "—", "—", "—"},
	)
	h := r.final.Histogram("persona_render_duration_seconds", nil)
	rows = append(rows,
		[]string{"renders of the last round's manager, before the webhook samples: count, total time", fmt.Sprintf("%.0f, %.2f s", h.Count, h.Sum), "—", "—", "—", "—"},
		[]string{"render duration p50 / p99 (from buckets)", fmt.Sprintf("%s / %s", msF(h.Quantile(0.5)), msF(h.Quantile(0.99))), "—", "—", "≤ 250 ms budget", yesNo(h.Count > 0 && h.Quantile(0.99) <= 0.25)},
	)
	failures := r.renderFailures
	rows = append(rows, []string{"render failures (persona_render_failures_total), every round", fmt.Sprintf("%.0f", failures), "—", "—", "0", yesNo(failures == 0)})
	writeTable(&b, rows)
	if len(r.rounds) > 1 {
		b.WriteString("\nEach round (the table above gives their medians):\n\n")
		writeTable(&b, r.roundRows())
	}

	fmt.Fprintf(&b, "\n- machine: %s; load average %s before, %s after\n", r.machine, r.loadBefore, r.loadAfter)
	fmt.Fprintf(&b, "- N=%d, harness workers %d, harness client QPS %d / burst %d (not throttled); webhook: %d creates on and %d off, in %d blocks alternating on/off, each after %d uncounted creates\n",
		n, r.opts.workers, harnessQPS, harnessBurst, len(on), len(off), webhookBlocks, webhookWarmCreates)
	fmt.Fprintf(&b, "- manager flags: %s (defaults otherwise; see cmd/main.go)\n", strings.Join(r.managerFlags, " "))
	fmt.Fprintf(&b, "- %d rounds, each measuring its floors first and then the operator with a manager of its own; ", len(r.rounds))
	fmt.Fprintf(&b, "floors, measured before the round's manager starts, without the webhook, with %d workers of the same client: convergence = create the layers, the parent and %d Personas + create each ConfigMap + patch each status; "+
		"fan-out = update the %d ConfigMaps; \"with Events\" adds the writes personas.md#conditions requires as well: each Rendered Event (and, for fan-out, each status patch)\n", r.opts.workers, n, n)
	fmt.Fprintf(&b, "- convergence and fan-out end when the last Persona is Ready / ConfigMap has its new hash, as seen by a watch (cheaper than listing %d rendered objects every 200 ms)\n", n)
	fmt.Fprintf(&b, "- run took %s; manager log: %s\n", r.elapsed.Round(time.Second), r.logPath)
	if len(r.profiles) > 0 {
		sort.Strings(r.profiles)
		fmt.Fprintf(&b, "- CPU profiles of the first %d s of each phase (go tool pprof -top FILE): %s\n", r.opts.profileSeconds, strings.Join(r.profiles, ", "))
	}
	for _, err := range r.profileErrors {
		fmt.Fprintf(&b, "- profile missing: %v\n", err)
	}
	if creates := median(mapRounds(r.rounds, func(rr *roundResult) time.Duration { return rr.convergenceCreates })); creates > 0 {
		fmt.Fprintf(&b, "- convergence: the harness's creates (through the webhook) took %s of it (median)\n", secs(creates))
	}
	fmt.Fprintf(&b, "- the steady state window starts once the manager has written nothing for %s\n", settleQuiet)
	fmt.Fprintf(&b, "\nWhere the time went, per phase of the last round (CPU is each process's user+system time during the phase):\n\n")
	for _, ph := range r.phases {
		if ph.round == len(r.rounds) || ph.round == 0 {
			fmt.Fprintf(&b, "- %s\n", ph.describe(n))
		}
	}
	return b.String()
}

func mapRounds(rounds []*roundResult, f func(*roundResult) time.Duration) []time.Duration {
	out := make([]time.Duration, len(rounds))
	for i, rr := range rounds {
		out[i] = f(rr)
	}
	return out
}

// roundRows is a table of every round's times and ratios.
func (r *report) roundRows() [][]string {
	rows := [][]string{{"round", "convergence floor", "… with Events", "convergence", "ratio", "fan-out floor", "… with status and Events", "fan-out", "ratio"}}
	ratio := func(op, floor time.Duration) string {
		if op <= 0 || floor <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f×", op.Seconds()/floor.Seconds())
	}
	for i, rr := range r.rounds {
		rows = append(rows, []string{fmt.Sprint(i + 1), secs(rr.convergenceFloor), secs(rr.convergenceSpecFloor), secs(rr.convergence), ratio(rr.convergence, rr.convergenceFloor),
			secs(rr.fanOutFloor), secs(rr.fanOutSpecFloor), secs(rr.fanOut), ratio(rr.fanOut, rr.fanOutFloor)})
	}
	return rows
}

func msF(seconds float64) string {
	if math.IsNaN(seconds) {
		return "—"
	}
	return ms(time.Duration(seconds * float64(time.Second)))
}

func isWrite(method string) bool {
	for _, m := range scrape.WriteMethods {
		if m == method {
			return true
		}
	}
	return false
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
		fmt.Fprintf(&b, "; persona reconciles %.0f (%.2f per persona), reconcile time %.1f s (mean %s, p99 %s) = %.0f%% of %.0f workers busy; renders %.0f taking %.1f s; mean queue wait %s",
			reconciles, reconciles/float64(n), rt.Sum, msF(rt.Sum/max(rt.Count, 1)), msF(rt.Quantile(0.99)),
			100*rt.Sum/(max(workers, 1)*ph.wall.Seconds()), workers, render.Count, render.Sum, msF(queue.Sum/max(queue.Count, 1)))
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
