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

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	personawebhook "github.com/persona-operator/persona-operator/internal/webhook"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/scrape"
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
	webhookBlocks      = 10
)

type options struct {
	n              int
	steady         time.Duration
	webhookSamples int
	workers        int
	managerFlags   []string
	out            string
	profileDir     string
	profileSeconds int
	rounds         int
}

func main() {
	var o options
	var managerFlags string
	flag.IntVar(&o.n, "n", 2000, "Personas to converge and fan out to.")
	flag.DurationVar(&o.steady, "steady", 60*time.Second, "The steady-state window in which the manager should write nothing.")
	flag.IntVar(&o.webhookSamples, "webhook-samples", 1000, "Sequential Persona creates timed with the webhook, and as many without it: the p99 of 1000 is the tenth slowest.")
	flag.IntVar(&o.rounds, "rounds", 3, "Rounds of floors and operator measurements; the table gives their medians.")
	flag.IntVar(&o.workers, "workers", 16, "Concurrent requests of the harness's client.")
	flag.StringVar(&managerFlags, "manager-flags", "", `Extra flags for the manager binary, e.g. "--persona-workers=8 --kube-api-qps=500".`)
	flag.StringVar(&o.out, "out", "", "Also write the table, as Markdown, to this file.")
	flag.StringVar(&o.profileDir, "profile", "", "Write CPU profiles of kube-apiserver and the manager during convergence and fan-out into this directory (read them with go tool pprof).")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 10, "With -profile: how many seconds of each phase, from its start, to profile.")
	flag.Parse()
	o.managerFlags = strings.Fields(managerFlags)
	if o.n < 1 || o.rounds < 1 || o.workers < 1 || o.webhookSamples < 1 || o.profileSeconds < 1 || o.steady < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "scale: -n, -rounds, -workers, -webhook-samples and -profile-seconds must be positive, -steady not negative, and no arguments")
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
		return fmt.Errorf("run from the repository's root (make scale, or go run ./test/scale): %w", err)
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

	// 1. The control plane.
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
	h := &harness{o: o, r: r, procs: findChildren()}
	if h.procs.apiserver == 0 || h.procs.etcd == 0 {
		step("warning: kube-apiserver or etcd is not a child of this process; their CPU time reads as 0")
	}
	h.cfg = rest.CopyConfig(plane.Config)
	h.cfg.QPS, h.cfg.Burst = harnessQPS, harnessBurst
	h.cfg.DisableCompression = true // as the manager: no gzip of the watches that time the phases
	if h.c, err = client.NewWithWatch(h.cfg, client.Options{Scheme: controlplane.Scheme}); err != nil {
		return err
	}
	if err := h.createNamespace(ctx, webhookNamespace); err != nil {
		return err
	}

	// 2. The manager, started and stopped by every round.
	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	h.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	r.logPath = filepath.Join(dir, "manager.log")
	logFile, err := os.Create(r.logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	flags := []string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false", "--leader-elect=false"}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
		pprofPort, err := controlplane.FreePort()
		if err != nil {
			return err
		}
		flags = append(flags, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))
		h.prof = &profiler{dir: o.profileDir, seconds: o.profileSeconds, apiserver: h.cfg, manager: fmt.Sprintf("http://127.0.0.1:%d", pprofPort)}
	}
	flags = append(flags, o.managerFlags...)
	r.managerFlags = flags
	if h.manager, err = plane.NewManager(binary, logFile, flags...); err != nil {
		return err
	}
	defer func() {
		if stopErr := h.manager.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop the manager: %w", stopErr)
		}
	}()

	// 3. The rounds: each measures the floors, then the operator.
	for i := 1; i <= o.rounds; i++ {
		rr, err := h.round(ctx, i)
		if err != nil {
			return err
		}
		r.rounds = append(r.rounds, rr)
		if rr.timeout() {
			break
		}
	}

	// 4. Steady state: the manager of the last round has just written
	// nothing for settleQuiet.
	step("steady state: counting the manager's writes for %s", o.steady)
	ph, err := r.beginManaged("steady state", h.procs, h.metricsURL)
	if err != nil {
		return err
	}
	if r.steadyWrites, err = steady(ctx, h.metricsURL, o.steady); err != nil {
		return err
	}
	if err := r.endManaged(ctx, ph, h.metricsURL); err != nil {
		return err
	}
	step("  writes: %v", r.steadyWrites)

	// 5. The last manager's memory and render metrics, at N personas: the
	// webhook's samples that follow add more.
	if err := h.readManager(ctx); err != nil {
		return err
	}

	// 6. Webhook latency, with the webhook and without it, in alternating
	// blocks so that drift in the machine's load falls on both.
	step("webhook: %d sequential creates with the webhook and %d without, in %d alternating blocks", o.webhookSamples, o.webhookSamples, webhookBlocks)
	before, err := scrape.Get(ctx, h.metricsURL)
	if err != nil {
		return err
	}
	if r.webhookOn, r.webhookOff, err = webhookLatency(ctx, h.c, webhookNamespace, o.webhookSamples); err != nil {
		return err
	}
	after, err := scrape.Get(ctx, h.metricsURL)
	if err != nil {
		return err
	}
	match := map[string]string{"webhook": personawebhook.PersonaPath}
	r.webhookHandler = after.Histogram("controller_runtime_webhook_latency_seconds", match).Minus(before.Histogram("controller_runtime_webhook_latency_seconds", match))

	r.profiles, r.profileErrors = h.prof.wait()
	r.loadAfter = loadAverage()
	r.elapsed = time.Since(began)

	// 7. The table.
	table := r.markdown()
	fmt.Print(table)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(table), 0o644); err != nil {
			return err
		}
	}
	return nil
}
