package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/controller"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// snapshotBytesPerPersona is what the byte cap allows each of the world's
// snapshots: their data is about 14 KiB.
const snapshotBytesPerPersona = 32 << 10

// harness is what the rounds share: the control plane, the harness's
// client and the manager, which each round starts and stops.
type harness struct {
	o   options
	r   *report
	cfg *rest.Config
	c   client.WithWatch
	// admin is an HTTP client of kube-apiserver as the administrator, for
	// what has no typed client: its metrics and its pprof endpoints.
	admin      *http.Client
	procs      processes
	manager    *controlplane.Manager
	metricsURL string
	// pprofURL is the base of the manager's pprof endpoints.
	pprofURL string
	prof     *profiler
	// adjacent takes the round's fan-out floors beside its fan-outs.
	adjacent *adjacentFloors
}

// newHarness finds the control plane's processes, whose CPU time the
// phases account, and connects the harness's client to it.
func newHarness(ctx context.Context, o options, r *report, plane *controlplane.Plane) (*harness, error) {
	h := &harness{o: o, r: r, procs: findChildren()}
	if h.procs.apiserver == 0 || h.procs.etcd == 0 {
		step("warning: kube-apiserver or etcd is not a child of this process; their CPU time reads as 0")
	}
	h.cfg = rest.CopyConfig(plane.Config)
	h.cfg.QPS, h.cfg.Burst = harnessQPS, harnessBurst
	h.cfg.DisableCompression = true // as the manager: no gzip of the watches that time the phases
	var err error
	if h.c, err = client.NewWithWatch(h.cfg, client.Options{Scheme: controlplane.Scheme}); err != nil {
		return nil, err
	}
	if h.admin, err = rest.HTTPClientFor(h.cfg); err != nil {
		return nil, err
	}
	if err := h.checkConsistencyChecks(ctx); err != nil {
		return nil, err
	}
	if err := h.createNamespace(ctx, webhookNamespace, nil); err != nil {
		return nil, err
	}
	return h, nil
}

// newManager prepares the manager that every round starts and stops: its
// metrics on a free port, its pprof endpoints on another (the pod figure
// forces a collection through them; -profile takes its profiles there),
// then -manager-flags.
func (h *harness) newManager(plane *controlplane.Plane, binary string, log io.Writer) error {
	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	h.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	pprofPort, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	h.pprofURL = fmt.Sprintf("http://127.0.0.1:%d", pprofPort)
	flags := []string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false", "--leader-elect=false",
		fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort)}
	if h.o.profileDir != "" {
		if err := os.MkdirAll(h.o.profileDir, 0o755); err != nil {
			return err
		}
		h.prof = &profiler{dir: h.o.profileDir, seconds: h.o.profileSeconds, apiserver: h.admin, apiserverURL: apiServerURL(h.cfg, ""), manager: h.pprofURL}
	}
	// The world puts every Persona in one namespace: its snapshot byte cap
	// is sized for them as docs/performance.md#capacity says, Personas ×
	// (revisionHistoryLimit 0 + 2) × data, with room for the data. Sized so
	// only above the default, which holds N = 2,000.
	if need := h.o.n * 2 * snapshotBytesPerPersona; need > controller.DefaultSnapshotBytesPerNamespace {
		flags = append(flags, fmt.Sprintf("--snapshot-bytes-per-namespace=%d", need))
	}
	flags = append(flags, h.o.managerFlags...)
	h.r.managerFlags = flags
	h.manager, err = plane.NewManager(binary, log, flags...)
	if err == nil {
		h.manager.Env = h.o.managerEnv
	}
	return err
}

// startManager starts the manager and waits until it has settled (no
// write for quiet, its queue empty) and serves the webhook.
func (h *harness) startManager(ctx context.Context, quiet time.Duration) error {
	if err := h.manager.Start(ctx); err != nil {
		return err
	}
	h.procs.manager = h.manager.PID()
	if _, err := settle(ctx, h.metricsURL, quiet, settleLimit); err != nil {
		return err
	}
	return waitWebhook(ctx, h.c, webhookNamespace, true)
}

// readBaselineRSS records the RSS of a manager that has started and
// settled while no Persona exists, the highest of the rounds as the peak
// is: what the Personas cost is the peak less it.
func (h *harness) readBaselineRSS() error {
	rss, err := procStatusBytes(h.manager.PID(), "VmRSS")
	if err != nil {
		return fmt.Errorf("read the manager's RSS: %w", err)
	}
	h.r.baselineRSS = max(h.r.baselineRSS, rss)
	return nil
}

// readManager records the running manager's peak RSS and its metrics,
// before it stops.
func (h *harness) readManager(ctx context.Context) error {
	hwm, err := procStatusBytes(h.manager.PID(), "VmHWM")
	if err != nil {
		return fmt.Errorf("read the manager's peak RSS: %w", err)
	}
	h.r.peakRSS = max(h.r.peakRSS, hwm)
	final, err := scrape.Get(ctx, h.metricsURL)
	if err != nil {
		return err
	}
	h.r.final = final
	h.r.addManagerTotals(final)
	return nil
}

// addManagerTotals adds the render failures and the admission requests
// turned away of a manager's metrics, read before it stops: every
// manager's count.
func (r *report) addManagerTotals(s scrape.Snapshot) {
	r.renderFailures += s.Sum("persona_render_failures_total", nil)
	if r.turnedAway == nil {
		r.turnedAway = map[string]float64{}
	}
	for by, n := range turnedAway(s) {
		r.turnedAway[by] += n
	}
}

// turnedAway is the admission requests the webhooks of s's manager turned
// away at their bounds, by webhook and reason ("validating/NoTurnInTime").
func turnedAway(s scrape.Snapshot) map[string]float64 {
	const name = "persona_webhook_requests_turned_away_total"
	out := map[string]float64{}
	for webhook := range s.SumBy(name, "webhook", nil) {
		for reason, n := range s.SumBy(name, "reason", map[string]string{"webhook": webhook}) {
			if n > 0 {
				out[webhook+"/"+reason] = n
			}
		}
	}
	return out
}

// turnedAwayTotal is how many requests by counts in all, of every webhook
// and reason.
func turnedAwayTotal(by map[string]float64) (total float64) {
	for _, n := range by {
		total += n
	}
	return total
}

// turnedAwayText says how many requests by counts, in all and by webhook
// and reason.
func turnedAwayText(by map[string]float64) string {
	total := turnedAwayTotal(by)
	if total == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		if by[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, by[k]))
		}
	}
	return fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", "))
}

// parallel runs do(0..n-1) on at most workers goroutines and returns the
// first error; after an error or a cancelled ctx no new item starts. Every
// goroutine has returned when it returns.
func parallel(ctx context.Context, workers, n int, do func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return do(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}
