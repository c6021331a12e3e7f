package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// The phases that edit the ClusterPromptLayer and the parent Persona.
const (
	clusterFanOutPhase = "ClusterPromptLayer fan-out"
	parentFanOutPhase  = "Persona parent fan-out"
)

// convergeNamespace is the namespace round i measures in.
func convergeNamespace(i int) string { return fmt.Sprintf("scale-converge-%d", i) }

// createNamespace creates namespace ns with labels.
func (h *harness) createNamespace(ctx context.Context, ns string, labels map[string]string) error {
	if err := h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// measureRounds runs the rounds, each measuring the floors, then the
// operator, then the floors again; a round that timed out is the last.
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
// manager and measures convergence and the fan-outs of the edits of a
// PromptLayer, a ClusterPromptLayer and a parent Persona, and of the
// PromptPlatform's create, edit and delete, then stops the
// manager and measures the floors again. The round's ClusterPromptLayer,
// which selects the round's namespace by its label, is created before
// convergence, so every Persona renders with it throughout. The last round
// (or one that timed out) measures the steady state before its manager
// stops and the webhook after a manager starts again; every other round
// deletes what it measured, the ClusterPromptLayer too.
func (h *harness) round(ctx context.Context, i int) (*roundResult, error) {
	rr := &roundResult{}
	h.r.round = i
	if err := h.floors(ctx, i, before, rr); err != nil {
		return nil, err
	}
	ns := convergeNamespace(i)
	step("round %d: rendering %d personas offline as the edits of the PromptLayer, the ClusterPromptLayer and the parent will render them", i, h.o.n)
	layerHashes, err := renderedHashes(ns, i, h.o.n, layerEdited)
	if err != nil {
		return nil, err
	}
	guardrailHashes, err := renderedHashes(ns, i, h.o.n, guardrailEdited)
	if err != nil {
		return nil, err
	}
	parentHashes, err := renderedHashes(ns, i, h.o.n, parentEdited)
	if err != nil {
		return nil, err
	}
	step("round %d: rendering %d personas offline as the PromptPlatform's create and edit will render them", i, h.o.n)
	platformCreatedHashes, err := renderedHashes(ns, i, h.o.n, platformCreated)
	if err != nil {
		return nil, err
	}
	platformEditedHashes, err := renderedHashes(ns, i, h.o.n, platformEdited)
	if err != nil {
		return nil, err
	}

	adjacent, err := h.newAdjacentFloors(ctx, i, &rr.floors)
	if err != nil {
		return nil, err
	}
	h.adjacent = adjacent

	step("round %d: starting the manager %s", i, strings.Join(h.r.managerFlags, " "))
	if err := h.startManager(ctx, 3*time.Second); err != nil {
		return nil, err
	}
	if err := h.readBaselineRSS(); err != nil {
		return nil, err
	}
	last := i == h.o.rounds
	if err := h.createNamespace(ctx, ns, roundLabels(i)); err != nil {
		return nil, err
	}
	world, err := newWorld(ns, i, h.o.n, false, created)
	if err != nil {
		return nil, err
	}
	step("round %d: creating ClusterPromptLayer %s, which selects namespace %s by its label %s, until it is Ready", i, world.guardrail.Name, ns, guardrailLabel)
	if err := createGuardrail(ctx, h.c, world.guardrail); err != nil {
		return nil, err
	}

	step("round %d: convergence: %d personas created with %d workers until all are Ready", i, h.o.n, h.o.workers)
	ph, err := h.beginWindow(ctx, "convergence", true)
	if err != nil {
		return nil, err
	}
	if last {
		h.prof.start(ctx, "convergence")
		h.prof.watchPeak(ctx, "convergence", h.procs.manager)
	}
	rr.convergenceStart = time.Now()
	rr.convergence, rr.convergenceCreates, err = convergence(ctx, h.c, world, h.o.workers, convergenceTimeout)
	if isTimeout(err) {
		rr.convergenceTimeout = err.Error()
		step("  %v", err)
	} else if err != nil {
		return nil, err
	} else {
		step("  %s (the creates took %s)", rr.convergence.Round(time.Millisecond), rr.convergenceCreates.Round(time.Millisecond))
	}
	if last {
		h.prof.heap(ctx, "convergence")
	}
	if err := h.r.endManaged(ctx, ph, h.metricsURL); err != nil {
		return nil, err
	}
	step("waiting until the manager has written nothing for %s", settleQuiet)
	if err := h.r.settleManaged(ctx, ph, h.metricsURL, settleQuiet); err != nil {
		return nil, err
	}

	if rr.convergenceTimeout == "" {
		if err := adjacent.measure(ctx); err != nil {
			return nil, err
		}
		step("round %d: fan-out: edit PromptLayer %s until all %d ConfigMaps, then all statuses, have the hash rendered offline", i, sharedLayer, h.o.n)
		if rr.fanOut, err = h.fanOutPhase(ctx, "fan-out", world, editLayer(h.c, world, 2), layerHashes, last); err != nil {
			return nil, err
		}
	}
	if rr.convergenceTimeout == "" && rr.fanOut.timeout == "" {
		step("round %d: ClusterPromptLayer fan-out: edit ClusterPromptLayer %s until all %d ConfigMaps, then all statuses, have the hash rendered offline", i, world.guardrail.Name, h.o.n)
		if rr.clusterFanOut, err = h.fanOutPhase(ctx, clusterFanOutPhase, world, editGuardrail(h.c, world, 2), guardrailHashes, last); err != nil {
			return nil, err
		}
	}
	if !rr.timeout() {
		step("round %d: Persona parent fan-out: edit Persona %s until all %d ConfigMaps, then all statuses, have the hash rendered offline", i, parentName, h.o.n)
		if rr.parentFanOut, err = h.fanOutPhase(ctx, parentFanOutPhase, world, editParent(h.c, world, 2), parentHashes, last); err != nil {
			return nil, err
		}
	}
	// Deleting the PromptPlatform brings back the parent's fan-out's renders.
	if err := h.platformPhases(ctx, i, world, rr, platformCreatedHashes, platformEditedHashes, parentHashes, last); err != nil {
		return nil, err
	}
	// What follows measures the cluster as the fan-outs left it.
	h.adjacent = nil
	if err := adjacent.remove(ctx); err != nil {
		return nil, err
	}

	// The last round's manager is measured at rest too, with every Persona
	// it rendered: its ClusterPromptLayer and Personas stay.
	final := last || rr.timeout()
	if final {
		if err := h.measureSteadyState(ctx); err != nil {
			return nil, err
		}
		h.prof.heap(ctx, "steady state")
	}
	if err := h.readManager(ctx); err != nil {
		return nil, err
	}
	// The last round's profiles read the manager; they end before it stops.
	h.prof.wait()
	step("round %d: stopping the manager", i)
	if err := h.manager.Stop(); err != nil {
		return nil, fmt.Errorf("stop the manager: %w", err)
	}
	h.procs.manager = 0
	// A round that timed out compares with the floors before it alone.
	if !rr.timeout() {
		if err := h.floors(ctx, i, after, rr); err != nil {
			return nil, err
		}
	}
	if final {
		return rr, h.measureWebhookRestarted(ctx)
	}
	step("round %d: deleting what it measured", i)
	if err := deleteGuardrail(ctx, h.c, world.guardrail); err != nil {
		return nil, err
	}
	if err := deletePlatform(h.c)(ctx); err != nil {
		return nil, err
	}
	return rr, deleteAll(ctx, h.c, ns)
}

// fanOutPhase measures the fan-out of edit as the phase name, then waits
// for the manager to settle, so that the phase's writes include what
// trailed it, then takes the adjacent floor after it. A timeout is not an
// error: it is returned in the result, to be reported.
func (h *harness) fanOutPhase(ctx context.Context, name string, w *world, edit func(context.Context) error, want map[string]string, last bool) (fanOutResult, error) {
	var res fanOutResult
	ph, err := h.beginWindow(ctx, name, true)
	if err != nil {
		return fanOutResult{}, err
	}
	res.start, res.configMaps, res.statuses, err = fanOut(ctx, h.c, h.procs, w, name, edit, want, fanOutTimeout, func() {
		if last {
			h.prof.start(ctx, name)
			h.prof.watchPeak(ctx, name, h.procs.manager)
		}
	})
	if isTimeout(err) {
		res.timeout = err.Error()
		step("  %v", err)
	} else if err != nil {
		return fanOutResult{}, err
	} else {
		step("  %s (every status current after %s)", res.configMaps.Round(time.Millisecond), res.statuses.Round(time.Millisecond))
	}
	if last {
		h.prof.heap(ctx, name)
	}
	if err := h.r.endManaged(ctx, ph, h.metricsURL); err != nil {
		return fanOutResult{}, err
	}
	step("waiting until the manager has written nothing for %s", settleQuiet)
	if err := h.r.settleManaged(ctx, ph, h.metricsURL, settleQuiet); err != nil {
		return fanOutResult{}, err
	}
	return res, h.adjacent.measure(ctx)
}

// deleteAll deletes every Persona, PromptLayer, ConfigMap and Event of ns:
// envtest runs no garbage collector or namespace controller. The round's
// ClusterPromptLayer, cluster-scoped, is deleted by deleteGuardrail.
//
// Deleting 20,000 Personas takes the API server longer than its request
// timeout (60 s): it answers with a timeout, or resets the request's HTTP/2
// stream when it had begun to answer (the 40,000 ConfigMaps of a floor at
// N = 20,000), and goes on deleting, so the delete is asked again, up to
// deleteAllTries times, until one finishes.
func deleteAll(ctx context.Context, c client.Client, ns string) error {
	for _, obj := range []client.Object{&v1alpha1.Persona{}, &v1alpha1.PromptLayer{}, &corev1.ConfigMap{}, &eventsv1.Event{}} {
		var err error
		for range deleteAllTries {
			if err = c.DeleteAllOf(ctx, obj, client.InNamespace(ns)); !deleteAgain(err) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("delete every %T of %s: %w", obj, ns, err)
		}
	}
	return nil
}

const deleteAllTries = 10

// deleteAgain reports whether a collection's delete that failed with err
// is asked again: it timed out, or failed with no answer of the API
// server's (its stream reset).
func deleteAgain(err error) bool {
	var status apierrors.APIStatus
	return err != nil && (apierrors.IsTimeout(err) || !errors.As(err, &status))
}

// createGuardrail creates the round's ClusterPromptLayer and waits until
// the manager has reported it Ready for its generation, so that its status
// write falls before the phase that follows.
func createGuardrail(ctx context.Context, c client.Client, l *v1alpha1.ClusterPromptLayer) error {
	obj := l.DeepCopy()
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("create ClusterPromptLayer %s: %w", l.Name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return fmt.Errorf("get ClusterPromptLayer %s: %w", l.Name, err)
		}
		ready := meta.FindStatusCondition(obj.Status.Conditions, "Ready")
		if ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == obj.Generation {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ClusterPromptLayer %s is not Ready after a minute (conditions: %v)", l.Name, obj.Status.Conditions)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deleteGuardrail deletes the round's ClusterPromptLayer, if it exists.
func deleteGuardrail(ctx context.Context, c client.Client, l *v1alpha1.ClusterPromptLayer) error {
	if err := c.Delete(ctx, &v1alpha1.ClusterPromptLayer{ObjectMeta: metav1.ObjectMeta{Name: l.Name}}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete ClusterPromptLayer %s: %w", l.Name, err)
	}
	return nil
}
