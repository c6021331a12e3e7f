package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// webhookNamespace holds the webhook probes and latency samples.
const webhookNamespace = "scale-webhook"

// harness is what the rounds share: the control plane, the harness's
// client and the manager, which each round starts and all but the last stop.
type harness struct {
	o          options
	r          *report
	cfg        *rest.Config
	c          client.WithWatch
	procs      processes
	manager    *controlplane.Manager
	metricsURL string
	prof       *profiler
}

// roundResult is what one round measured.
type roundResult struct {
	convergenceFloor, convergenceSpecFloor, fanOutFloor, fanOutSpecFloor time.Duration
	convergence, convergenceCreates, fanOut                              time.Duration
	convergenceTimeout, fanOutTimeout                                    string
}

func (rr *roundResult) timeout() bool { return rr.convergenceTimeout != "" || rr.fanOutTimeout != "" }

func (h *harness) createNamespace(ctx context.Context, ns string) error {
	if err := h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// measureRounds runs the rounds, each measuring the floors, then the
// operator; a round that timed out is the last.
func (h *harness) measureRounds(ctx context.Context) error {
	for i := 1; i <= h.o.rounds; i++ {
		rr, err := h.round(ctx, i)
		if err != nil {
			return err
		}
		h.r.rounds = append(h.r.rounds, rr)
		if rr.timeout() {
			break
		}
	}
	return nil
}

// round measures the floors with the manager stopped, then starts the
// manager and measures convergence and fan-out. Every round but the last
// (or one that timed out) stops the manager and deletes what it measured.
func (h *harness) round(ctx context.Context, i int) (*roundResult, error) {
	rr := &roundResult{}
	h.r.round = i
	if err := h.floors(ctx, i, rr); err != nil {
		return nil, err
	}

	step("round %d: starting the manager %s", i, strings.Join(h.r.managerFlags, " "))
	if err := h.manager.Start(ctx); err != nil {
		return nil, err
	}
	h.procs.manager = h.manager.PID()
	if _, err := settle(ctx, h.metricsURL, 3*time.Second, settleLimit); err != nil {
		return nil, err
	}
	if err := waitWebhook(ctx, h.c, webhookNamespace, true); err != nil {
		return nil, err
	}
	last := i == h.o.rounds
	ns := fmt.Sprintf("scale-converge-%d", i)
	if err := h.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	world, err := newWorld(ns, h.o.n, false, 1)
	if err != nil {
		return nil, err
	}

	step("round %d: convergence: %d personas created with %d workers until all are Ready", i, h.o.n, h.o.workers)
	ph, err := h.r.beginManaged("convergence", h.procs, h.metricsURL)
	if err != nil {
		return nil, err
	}
	if last {
		h.prof.start(ctx, "convergence")
	}
	rr.convergence, rr.convergenceCreates, err = convergence(ctx, h.c, world, h.o.workers, convergenceTimeout)
	if isTimeout(err) {
		rr.convergenceTimeout = err.Error()
		step("  %v", err)
	} else if err != nil {
		return nil, err
	} else {
		step("  %s (the creates took %s)", rr.convergence.Round(time.Millisecond), rr.convergenceCreates.Round(time.Millisecond))
	}
	if err := h.r.endManaged(ctx, ph, h.metricsURL); err != nil {
		return nil, err
	}
	step("waiting until the manager has written nothing for %s", settleQuiet)
	if err := h.r.settleManaged(ctx, ph, h.metricsURL, settleQuiet); err != nil {
		return nil, err
	}

	if rr.convergenceTimeout == "" {
		step("round %d: fan-out: edit PromptLayer %s until all %d ConfigMaps change", i, sharedLayer, h.o.n)
		if ph, err = h.r.beginManaged("fan-out", h.procs, h.metricsURL); err != nil {
			return nil, err
		}
		if last {
			h.prof.start(ctx, "fan-out")
		}
		rr.fanOut, err = fanOut(ctx, h.c, world, 2, fanOutTimeout)
		if isTimeout(err) {
			rr.fanOutTimeout = err.Error()
			step("  %v", err)
		} else if err != nil {
			return nil, err
		} else {
			step("  %s", rr.fanOut.Round(time.Millisecond))
		}
		if err := h.r.endManaged(ctx, ph, h.metricsURL); err != nil {
			return nil, err
		}
		step("waiting until the manager has written nothing for %s", settleQuiet)
		if err := h.r.settleManaged(ctx, ph, h.metricsURL, settleQuiet); err != nil {
			return nil, err
		}
	}
	if last || rr.timeout() {
		return rr, nil
	}

	if err := h.readManager(ctx); err != nil {
		return nil, err
	}
	step("round %d: stopping the manager and deleting what it measured", i)
	if err := h.manager.Stop(); err != nil {
		return nil, fmt.Errorf("stop the manager: %w", err)
	}
	h.procs.manager = 0
	return rr, deleteAll(ctx, h.c, ns)
}

// floors measures the four floors of round i with a bare client, without
// the webhook and with the manager stopped, so that nobody watches what the
// bare client writes.
func (h *harness) floors(ctx context.Context, i int, rr *roundResult) error {
	floorNS, specNS := fmt.Sprintf("scale-floor-%d", i), fmt.Sprintf("scale-floor-spec-%d", i)
	for _, ns := range []string{floorNS, specNS} {
		if err := h.createNamespace(ctx, ns); err != nil {
			return err
		}
	}
	step("round %d: rendering %d personas offline for the floors", i, h.o.n)
	floor, err := newWorld(floorNS, h.o.n, true, 1)
	if err != nil {
		return err
	}
	floorEdited, err := newWorld(floorNS, h.o.n, true, 2)
	if err != nil {
		return err
	}
	spec, err := newWorld(specNS, h.o.n, true, 1)
	if err != nil {
		return err
	}
	specEdited, err := newWorld(specNS, h.o.n, true, 2)
	if err != nil {
		return err
	}
	hooks, err := removeWebhooks(ctx, h.c)
	if err != nil {
		return err
	}
	if err := waitWebhook(ctx, h.c, webhookNamespace, false); err != nil {
		return err
	}
	c, workers := h.c, h.o.workers
	floors := []struct {
		name string
		into *time.Duration
		do   func() (time.Duration, error)
	}{
		{"convergence floor: a bare client creates the objects, each ConfigMap and status", &rr.convergenceFloor,
			func() (time.Duration, error) { return convergenceFloor(ctx, c, floor, workers, false) }},
		{"fan-out floor: a bare client updates the ConfigMaps", &rr.fanOutFloor,
			func() (time.Duration, error) { return fanOutFloor(ctx, c, floor, floorEdited.renders, workers, false) }},
		{"convergence floor with Events: as above, plus each Rendered Event", &rr.convergenceSpecFloor,
			func() (time.Duration, error) { return convergenceFloor(ctx, c, spec, workers, true) }},
		{"fan-out floor with status and Events: each ConfigMap, status and Rendered Event", &rr.fanOutSpecFloor,
			func() (time.Duration, error) { return fanOutFloor(ctx, c, spec, specEdited.renders, workers, true) }},
	}
	for _, f := range floors {
		step("round %d: %s (%d personas, %d workers)", i, f.name, h.o.n, workers)
		ph := h.r.begin(strings.SplitN(f.name, ":", 2)[0], h.procs, nil)
		if *f.into, err = f.do(); err != nil {
			return err
		}
		h.r.end(ph, nil)
		step("  %s", f.into.Round(time.Millisecond))
	}
	for _, ns := range []string{floorNS, specNS} {
		if err := deleteAll(ctx, c, ns); err != nil {
			return err
		}
	}
	return hooks.restore(ctx, c)
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
	h.r.renderFailures += final.Sum("persona_render_failures_total", nil)
	return nil
}
