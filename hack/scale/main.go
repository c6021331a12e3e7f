// Command scale measures persona-operator at scale on a local control plane
// (envtest's kube-apiserver and etcd) with the manager binary, and prints one
// table: convergence of N Personas, fan-out of a shared PromptLayer edit,
// API writes in a steady state, the webhook's added create latency, and the
// manager's memory and render times, each beside a floor measured in the
// same run. Run it with `make scale` (SCALE_FLAGS="-n 500 ..."). It is a
// measurement: it exits 0 when targets are missed, non-zero on errors.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/persona-operator/persona-operator/internal/scrape"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/persona-operator/persona-operator/internal/controlplane"
	personawebhook "github.com/persona-operator/persona-operator/internal/webhook"
)

// The harness's own client limits: high, so the harness is not throttled.
const (
	harnessQPS   = 1000
	harnessBurst = 2000
)

// Bounds of the waits.
const (
	convergenceTimeout = 10 * time.Minute
	fanOutTimeout      = 10 * time.Minute
	settleLimit        = 3 * time.Minute
	// settleQuiet is how long the manager must write nothing to count as
	// settled: longer than client-go's event recorder waits (10s ± 25%)
	// before it retries an Event write, so retries count in their phase.
	settleQuiet        = 15 * time.Second
	webhookWarmCreates = 2 // per block, not counted
	webhookBlocks      = 4
)

type options struct {
	n              int
	steady         time.Duration
	webhookSamples int
	workers        int
	managerFlags   []string
	out            string
}

func main() {
	var o options
	var managerFlags string
	flag.IntVar(&o.n, "n", 2000, "Personas to converge and fan out to.")
	flag.DurationVar(&o.steady, "steady", 60*time.Second, "The steady-state window in which the manager should write nothing.")
	flag.IntVar(&o.webhookSamples, "webhook-samples", 300, "Sequential Persona creates timed with and without the webhook.")
	flag.IntVar(&o.workers, "workers", 16, "Concurrent requests of the harness's client.")
	flag.StringVar(&managerFlags, "manager-flags", "", `Extra flags for the manager binary, e.g. "--persona-workers=8 --kube-api-qps=500".`)
	flag.StringVar(&o.out, "out", "", "Also write the table, as Markdown, to this file.")
	flag.Parse()
	o.managerFlags = strings.Fields(managerFlags)
	if o.n < 1 || o.workers < 1 || o.webhookSamples < 1 || o.steady < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "scale: -n, -workers and -webhook-samples must be positive, -steady not negative, and no arguments")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted; the manager and the control plane are stopped")
		}
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(o options) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }() // a second Ctrl-C kills at once
	began := time.Now()
	r := &report{opts: o, machine: machineInfo(), loadBefore: loadAverage()}

	root, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "config", "crd", "bases")); err != nil {
		return fmt.Errorf("run from the repository's root (make scale, or go run ./hack/scale): %w", err)
	}
	dir, err := os.MkdirTemp("", "persona-scale-")
	if err != nil {
		return err
	}
	binary := filepath.Join(dir, "manager")
	defer os.Remove(binary) // the directory stays: it holds the manager's log
	step("building the manager")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd").CombinedOutput(); err != nil {
		return fmt.Errorf("build the manager: %v\n%s", err, out)
	}

	step("starting kube-apiserver and etcd")
	// envtest gives them 20s by default, too little on a busy machine; its
	// failed attempts can leave a kube-apiserver behind.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		_ = os.Setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "2m")
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard))) // envtest's errors are returned
	plane, err := controlplane.Start(root)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := plane.Stop(); stopErr != nil && err == nil && ctx.Err() == nil {
			err = fmt.Errorf("stop the control plane: %w", stopErr)
		}
	}()
	procs := findChildren()
	if procs.apiserver == 0 || procs.etcd == 0 {
		step("warning: kube-apiserver or etcd is not a child of this process; their CPU time reads as 0")
	}
	cfg := rest.CopyConfig(plane.Config)
	cfg.QPS, cfg.Burst = harnessQPS, harnessBurst
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: controlplane.Scheme})
	if err != nil {
		return err
	}
	for _, ns := range []string{"scale-floor", "scale-floor-spec", "scale-converge", "scale-webhook"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}

	// 2. The floors, before the manager runs, without the webhook (nothing
	// serves it yet), so that nobody watches what the bare client writes.
	step("rendering %d personas offline for the floors", o.n)
	floor, err := newWorld("scale-floor", o.n, true, 1)
	if err != nil {
		return err
	}
	floorEdited, err := newWorld("scale-floor", o.n, true, 2)
	if err != nil {
		return err
	}
	spec, err := newWorld("scale-floor-spec", o.n, true, 1)
	if err != nil {
		return err
	}
	specEdited, err := newWorld("scale-floor-spec", o.n, true, 2)
	if err != nil {
		return err
	}
	hooks, err := removeWebhooks(ctx, c)
	if err != nil {
		return err
	}
	if err := waitWebhook(ctx, c, floor.ns, false); err != nil {
		return err
	}
	floors := []struct {
		name string
		into *time.Duration
		do   func() (time.Duration, error)
	}{
		{"convergence floor: a bare client creates the objects, each ConfigMap and status", &r.convergenceFloor,
			func() (time.Duration, error) { return convergenceFloor(ctx, c, floor, o.workers, false) }},
		{"fan-out floor: a bare client updates the ConfigMaps", &r.fanOutFloor,
			func() (time.Duration, error) {
				return fanOutFloor(ctx, c, floor, floorEdited.renders, o.workers, false)
			}},
		{"convergence floor with Events: as above, plus each Rendered Event", &r.convergenceSpecFloor,
			func() (time.Duration, error) { return convergenceFloor(ctx, c, spec, o.workers, true) }},
		{"fan-out floor with status and Events: each ConfigMap, status and Rendered Event", &r.fanOutSpecFloor,
			func() (time.Duration, error) { return fanOutFloor(ctx, c, spec, specEdited.renders, o.workers, true) }},
	}
	for _, f := range floors {
		step("%s (%d personas, %d workers)", f.name, o.n, o.workers)
		ph := r.begin(strings.SplitN(f.name, ":", 2)[0], procs, nil)
		if *f.into, err = f.do(); err != nil {
			return err
		}
		r.end(ph, nil)
		step("  %s", f.into.Round(time.Millisecond))
	}
	floor, floorEdited, spec, specEdited = nil, nil, nil, nil // the renders are large
	for _, ns := range []string{"scale-floor", "scale-floor-spec"} {
		if err := deleteAll(ctx, c, ns); err != nil {
			return err
		}
	}
	if err := hooks.restore(ctx, c); err != nil {
		return err
	}

	// 3. The manager.
	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	r.logPath = filepath.Join(dir, "manager.log")
	logFile, err := os.Create(r.logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	flags := append([]string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false", "--leader-elect=false"}, o.managerFlags...)
	r.managerFlags = flags
	step("starting the manager %s (log: %s)", strings.Join(flags, " "), r.logPath)
	manager, err := plane.NewManager(binary, logFile, flags...)
	if err != nil {
		return err
	}
	if err := manager.Start(ctx); err != nil {
		return err
	}
	defer func() {
		if stopErr := manager.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop the manager: %w", stopErr)
		}
	}()
	procs.manager = manager.PID()
	if _, err := settle(ctx, metricsURL, 3*time.Second, settleLimit); err != nil {
		return err
	}
	if err := waitWebhook(ctx, c, "scale-webhook", true); err != nil {
		return err
	}

	// 4. Convergence.
	world, err := newWorld("scale-converge", o.n, false, 1)
	if err != nil {
		return err
	}
	step("convergence: %d personas created with %d workers until all are Ready", o.n, o.workers)
	ph, err := r.beginManaged("convergence", procs, metricsURL)
	if err != nil {
		return err
	}
	r.convergence, r.convergenceCreates, err = convergence(ctx, c, world, o.workers, convergenceTimeout)
	if isTimeout(err) {
		r.convergenceTimeout = err.Error()
		step("  %v", err)
	} else if err != nil {
		return err
	} else {
		step("  %s (the creates took %s)", r.convergence.Round(time.Millisecond), r.convergenceCreates.Round(time.Millisecond))
	}
	if err := r.endManaged(ctx, ph, metricsURL); err != nil {
		return err
	}
	step("waiting until the manager has written nothing for %s", settleQuiet)
	if err := r.settleManaged(ctx, ph, metricsURL, settleQuiet); err != nil {
		return err
	}

	// 5. Fan-out.
	if r.convergenceTimeout == "" {
		step("fan-out: edit PromptLayer %s until all %d ConfigMaps change", sharedLayer, o.n)
		if ph, err = r.beginManaged("fan-out", procs, metricsURL); err != nil {
			return err
		}
		r.fanOut, err = fanOut(ctx, c, world, 2, fanOutTimeout)
		if isTimeout(err) {
			r.fanOutTimeout = err.Error()
			step("  %v", err)
		} else if err != nil {
			return err
		} else {
			step("  %s", r.fanOut.Round(time.Millisecond))
		}
		if err := r.endManaged(ctx, ph, metricsURL); err != nil {
			return err
		}
		step("waiting until the manager has written nothing for %s", settleQuiet)
		if err := r.settleManaged(ctx, ph, metricsURL, settleQuiet); err != nil {
			return err
		}
	}

	// 6. Steady state: the manager has just written nothing for settleQuiet.
	step("steady state: counting the manager's writes for %s", o.steady)
	if ph, err = r.beginManaged("steady state", procs, metricsURL); err != nil {
		return err
	}
	if r.steadyWrites, err = steady(ctx, metricsURL, o.steady); err != nil {
		return err
	}
	if err := r.endManaged(ctx, ph, metricsURL); err != nil {
		return err
	}
	step("  writes: %v", r.steadyWrites)

	// 7. Webhook latency, with the webhook and without it, in alternating
	// blocks so that drift in the machine's load falls on both.
	step("webhook: %d sequential creates with the webhook and %d without, in %d alternating blocks", o.webhookSamples, o.webhookSamples, webhookBlocks)
	before, err := scrape.Get(ctx, metricsURL)
	if err != nil {
		return err
	}
	if r.webhookOn, r.webhookOff, err = webhookLatency(ctx, c, "scale-webhook", o.webhookSamples); err != nil {
		return err
	}
	after, err := scrape.Get(ctx, metricsURL)
	if err != nil {
		return err
	}
	match := map[string]string{"webhook": personawebhook.PersonaPath}
	r.webhookHandler = after.Histogram("controller_runtime_webhook_latency_seconds", match).Minus(before.Histogram("controller_runtime_webhook_latency_seconds", match))

	// 8. The manager's memory and render metrics, over the whole run.
	if r.peakRSS, err = procStatusBytes(procs.manager, "VmHWM"); err != nil {
		return fmt.Errorf("read the manager's peak RSS: %w", err)
	}
	if r.final, err = scrape.Get(ctx, metricsURL); err != nil {
		return err
	}
	r.loadAfter = loadAverage()
	r.elapsed = time.Since(began)

	// 9. The table.
	table := r.markdown()
	fmt.Print(table)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(table), 0o644); err != nil {
			return err
		}
	}
	return nil
}
