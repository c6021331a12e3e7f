package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	personawebhook "github.com/persona-operator/persona-operator/internal/webhook"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// run measures and prints the table. Whatever it started it stops, on an
// error or an interrupt too.
func run(o options) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }() // a second Ctrl-C kills at once
	began := time.Now()
	r := &report{opts: o, machine: machineInfo(), loadBefore: loadAverage()}

	root, err := repositoryRoot()
	if err != nil {
		return err
	}
	dir, binary, err := buildManager(ctx)
	if err != nil {
		return err
	}
	defer os.Remove(binary) // the directory stays: it holds the manager's log

	plane, err := startControlPlane(root)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := plane.Stop(); stopErr != nil && err == nil && ctx.Err() == nil {
			err = fmt.Errorf("stop the control plane: %w", stopErr)
		}
	}()
	h, err := newHarness(ctx, o, r, plane)
	if err != nil {
		return err
	}

	r.logPath = filepath.Join(dir, "manager.log")
	logFile, err := os.Create(r.logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	if err := h.newManager(plane, binary, logFile); err != nil {
		return err
	}
	defer func() {
		if stopErr := h.manager.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop the manager: %w", stopErr)
		}
	}()

	if err := h.measureRounds(ctx); err != nil {
		return err
	}
	if err := h.measureSteadyState(ctx); err != nil {
		return err
	}
	// At N personas: the webhook's samples that follow add more.
	if err := h.readManager(ctx); err != nil {
		return err
	}
	if err := h.measureWebhook(ctx); err != nil {
		return err
	}
	r.finish(h.prof, began)
	return r.print(o.out)
}

// measureSteadyState counts the manager's writes while nothing changes: the
// manager of the last round has just written nothing for settleQuiet.
func (h *harness) measureSteadyState(ctx context.Context) error {
	step("steady state: counting the manager's writes for %s", h.o.steady)
	ph, err := h.r.beginManaged("steady state", h.procs, h.metricsURL)
	if err != nil {
		return err
	}
	if h.r.steadyWrites, err = steady(ctx, h.metricsURL, h.o.steady); err != nil {
		return err
	}
	if err := h.r.endManaged(ctx, ph, h.metricsURL); err != nil {
		return err
	}
	step("  writes: %v", h.r.steadyWrites)
	return nil
}

// measureWebhook times creates with the webhook and without it, in
// alternating blocks so that drift in the machine's load falls on both,
// and reads the webhook handler's own latency from the manager's metrics.
func (h *harness) measureWebhook(ctx context.Context) error {
	step("webhook: %d sequential creates with the webhook and %d without, in %d alternating blocks", h.o.webhookSamples, h.o.webhookSamples, webhookBlocks)
	before, err := scrape.Get(ctx, h.metricsURL)
	if err != nil {
		return err
	}
	if h.r.webhookOn, h.r.webhookOff, err = webhookLatency(ctx, h.c, webhookNamespace, h.o.webhookSamples); err != nil {
		return err
	}
	after, err := scrape.Get(ctx, h.metricsURL)
	if err != nil {
		return err
	}
	match := map[string]string{"webhook": personawebhook.PersonaPath}
	h.r.webhookHandler = after.Histogram("controller_runtime_webhook_latency_seconds", match).Minus(before.Histogram("controller_runtime_webhook_latency_seconds", match))
	return nil
}

// finish records what is known only at the end of the run.
func (r *report) finish(prof *profiler, began time.Time) {
	r.profiles, r.profileErrors = prof.wait()
	r.loadAfter = loadAverage()
	r.elapsed = time.Since(began)
}

// print writes the table to stdout, and to the file out unless it is empty.
func (r *report) print(out string) error {
	table := r.markdown()
	fmt.Print(table)
	if out == "" {
		return nil
	}
	return os.WriteFile(out, []byte(table), 0o644)
}
