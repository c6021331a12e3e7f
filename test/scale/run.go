package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	personawebhook "github.com/persona-operator/persona-operator/internal/webhook"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// run measures at each N and prints the tables. Whatever it started it
// stops, on an error or an interrupt too.
func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }() // a second Ctrl-C kills at once
	started := time.Now()

	root, err := repositoryRoot()
	if err != nil {
		return err
	}
	dir, binary, err := buildManager(ctx)
	if err != nil {
		return err
	}
	defer os.Remove(binary) // the directory stays: it holds the managers' logs

	var reports []*report
	var markdown strings.Builder
	began := started // the first N's time includes the build, as it always did
	for _, n := range o.sizes() {
		r, err := measureAt(ctx, o, n, root, dir, binary, began)
		if err != nil {
			return err
		}
		reports = append(reports, r)
		table := r.markdown()
		fmt.Print(table) // now: a curve's largest N can take an hour more
		markdown.WriteString(table)
		began = time.Now()
	}
	curve := figuresOf(reports)
	if len(o.curve) > 0 {
		table := curveMarkdown(curve)
		fmt.Print(table)
		markdown.WriteString(table)
	}
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(markdown.String()), 0o644); err != nil {
			return err
		}
	}
	if o.jsonPath != "" {
		return writeJSON(o.jsonPath, started, reports[0], curve)
	}
	return nil
}

// measureAt measures at n Personas on a control plane and a manager of its
// own, so that no N inherits another's objects or history, and returns the
// report. Whatever it started it stops, on an error or an interrupt too.
func measureAt(ctx context.Context, o options, n int, root, dir, binary string, began time.Time) (r *report, err error) {
	o.n = n
	logName := "manager.log"
	if len(o.curve) > 0 {
		logName = fmt.Sprintf("manager-n%d.log", n)
		if o.profileDir != "" {
			o.profileDir = filepath.Join(o.profileDir, fmt.Sprintf("n%d", n))
		}
	}
	r = &report{opts: o, machine: machineInfo(), loadBefore: loadAverage(), logPath: filepath.Join(dir, logName)}

	plane, err := startControlPlane(root)
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := plane.Stop(); stopErr != nil && err == nil && ctx.Err() == nil {
			err = fmt.Errorf("stop the control plane: %w", stopErr)
		}
	}()
	h, err := newHarness(ctx, o, r, plane)
	if err != nil {
		return nil, err
	}

	logFile, err := os.Create(r.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	if err := h.newManager(plane, binary, logFile); err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := h.manager.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop the manager: %w", stopErr)
		}
	}()

	if err := h.measureRounds(ctx); err != nil {
		return nil, err
	}
	r.finish(h.prof, began)
	return r, nil
}

// measureWebhookRestarted starts the manager again once the last round's
// floors are measured, waits until it has read what it delivered, measures
// the restarts, which kill it and start a new one, then the webhook. The
// samples run last because they add Personas: before the floors, the API
// server would measure them on a larger heap.
func (h *harness) measureWebhookRestarted(ctx context.Context) error {
	step("starting the manager again for the webhook's samples")
	if err := h.startManager(ctx, settleQuiet); err != nil {
		return err
	}
	if err := h.measureRestarts(ctx); err != nil {
		return err
	}
	if err := h.measureWebhook(ctx); err != nil {
		return err
	}
	// The restart renders every Persona again: its failures count too.
	s, err := scrape.Get(ctx, h.metricsURL)
	if err != nil {
		return err
	}
	h.r.addRenderFailures(s)
	return nil
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
