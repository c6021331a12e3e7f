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

// The phases that edit the ClusterPromptLayer and the parent Persona.
const (
	clusterFanOutPhase = "ClusterPromptLayer fan-out"
	parentFanOutPhase  = "Persona parent fan-out"
)

// harness is what the rounds share: the control plane, the harness's
// client and the manager, which each round starts and stops.
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
	// floors are measured before the operator's phases and after them;
	// each operator time stands beside them interpolated to its middle.
	floors                                  roundFloors
	convergence, convergenceCreates, fanOut time.Duration
	// clusterFanOut is the fan-out of the ClusterPromptLayer edit; its
	// floors are fan-out's: the same writes.
	clusterFanOut time.Duration
	// parentFanOut is the fan-out of the edit of the parent Persona;
	// its floors are fan-out's too.
	parentFanOut time.Duration
	// The statuses run on from the same edits until every Persona's status
	// also names its ConfigMap's new hash.
	fanOutStatuses, clusterFanOutStatuses, parentFanOutStatuses time.Duration
	// When convergence's creates and each fan-out's edit began.
	convergenceStart, fanOutStart, clusterFanOutStart, parentFanOutStart         time.Time
	convergenceTimeout, fanOutTimeout, clusterFanOutTimeout, parentFanOutTimeout string
	// The PromptPlatform's fan-outs (platform.go): its create, an edit and
	// its delete; their floors are fan-out's too.
	platformCreate, platformEdit, platformDelete fanOutResult
}

// Each round's times and timeouts, by measure, for the tables and the JSON.
var (
	convergenceOf           = func(rr *roundResult) time.Duration { return rr.convergence }
	convergenceCreatesOf    = func(rr *roundResult) time.Duration { return rr.convergenceCreates }
	fanOutOf                = func(rr *roundResult) time.Duration { return rr.fanOut }
	fanOutStatusesOf        = func(rr *roundResult) time.Duration { return rr.fanOutStatuses }
	clusterFanOutOf         = func(rr *roundResult) time.Duration { return rr.clusterFanOut }
	clusterFanOutStatusesOf = func(rr *roundResult) time.Duration { return rr.clusterFanOutStatuses }
	parentFanOutOf          = func(rr *roundResult) time.Duration { return rr.parentFanOut }
	parentFanOutStatusesOf  = func(rr *roundResult) time.Duration { return rr.parentFanOutStatuses }
	parentFanOutTimeoutOf   = func(rr *roundResult) string { return rr.parentFanOutTimeout }
	convergenceTimeoutOf    = func(rr *roundResult) string { return rr.convergenceTimeout }
	fanOutTimeoutOf         = func(rr *roundResult) string { return rr.fanOutTimeout }
	clusterFanOutTimeoutOf  = func(rr *roundResult) string { return rr.clusterFanOutTimeout }

	convergenceStartOf   = func(rr *roundResult) time.Time { return rr.convergenceStart }
	fanOutStartOf        = func(rr *roundResult) time.Time { return rr.fanOutStart }
	clusterFanOutStartOf = func(rr *roundResult) time.Time { return rr.clusterFanOutStart }
	parentFanOutStartOf  = func(rr *roundResult) time.Time { return rr.parentFanOutStart }

	convergenceBracket     = func(f *roundFloors) bracket { return f.convergence }
	convergenceSpecBracket = func(f *roundFloors) bracket { return f.convergenceSpec }
	fanOutBracket          = func(f *roundFloors) bracket { return f.fanOut }
	fanOutSpecBracket      = func(f *roundFloors) bracket { return f.fanOutSpec }

	// Each operator time's floors, interpolated to its middle. The three
	// fan-outs make the same writes, so they share fan-out's brackets.
	convergenceFloorOf       = floorAt(convergenceBracket, convergenceStartOf, convergenceOf)
	convergenceSpecFloorOf   = floorAt(convergenceSpecBracket, convergenceStartOf, convergenceOf)
	fanOutFloorOf            = floorAt(fanOutBracket, fanOutStartOf, fanOutOf)
	fanOutSpecFloorOf        = floorAt(fanOutSpecBracket, fanOutStartOf, fanOutStatusesOf)
	clusterFanOutFloorOf     = floorAt(fanOutBracket, clusterFanOutStartOf, clusterFanOutOf)
	clusterFanOutSpecFloorOf = floorAt(fanOutSpecBracket, clusterFanOutStartOf, clusterFanOutStatusesOf)
	parentFanOutFloorOf      = floorAt(fanOutBracket, parentFanOutStartOf, parentFanOutOf)
	parentFanOutSpecFloorOf  = floorAt(fanOutSpecBracket, parentFanOutStartOf, parentFanOutStatusesOf)
	// The floor with each status patch at the middle of a fan-out's
	// ConfigMaps, for their time against it.
	fanOutSpecFloorAtConfigMapsOf        = floorAt(fanOutSpecBracket, fanOutStartOf, fanOutOf)
	clusterFanOutSpecFloorAtConfigMapsOf = floorAt(fanOutSpecBracket, clusterFanOutStartOf, clusterFanOutOf)
)

func (rr *roundResult) timeout() bool {
	return rr.convergenceTimeout != "" || rr.fanOutTimeout != "" || rr.clusterFanOutTimeout != "" || rr.parentFanOutTimeout != "" ||
		rr.platformCreate.timeout != "" || rr.platformEdit.timeout != "" || rr.platformDelete.timeout != ""
}

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
	ph, err := h.r.beginManaged("convergence", h.procs, h.metricsURL)
	if err != nil {
		return nil, err
	}
	if last {
		h.prof.start(ctx, "convergence")
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
	if err := h.r.endManaged(ctx, ph, h.metricsURL); err != nil {
		return nil, err
	}
	step("waiting until the manager has written nothing for %s", settleQuiet)
	if err := h.r.settleManaged(ctx, ph, h.metricsURL, settleQuiet); err != nil {
		return nil, err
	}

	if rr.convergenceTimeout == "" {
		step("round %d: fan-out: edit PromptLayer %s until all %d ConfigMaps, then all statuses, have the hash rendered offline", i, sharedLayer, h.o.n)
		if rr.fanOutStart, rr.fanOut, rr.fanOutStatuses, rr.fanOutTimeout, err = h.fanOutPhase(ctx, "fan-out", world, editLayer(h.c, world, 2), layerHashes, last); err != nil {
			return nil, err
		}
	}
	if rr.convergenceTimeout == "" && rr.fanOutTimeout == "" {
		step("round %d: ClusterPromptLayer fan-out: edit ClusterPromptLayer %s until all %d ConfigMaps, then all statuses, have the hash rendered offline", i, world.guardrail.Name, h.o.n)
		if rr.clusterFanOutStart, rr.clusterFanOut, rr.clusterFanOutStatuses, rr.clusterFanOutTimeout, err = h.fanOutPhase(ctx, clusterFanOutPhase, world, editGuardrail(h.c, world, 2), guardrailHashes, last); err != nil {
			return nil, err
		}
	}
	if !rr.timeout() {
		step("round %d: Persona parent fan-out: edit Persona %s until all %d ConfigMaps, then all statuses, have the hash rendered offline", i, parentName, h.o.n)
		if rr.parentFanOutStart, rr.parentFanOut, rr.parentFanOutStatuses, rr.parentFanOutTimeout, err = h.fanOutPhase(ctx, parentFanOutPhase, world, editParent(h.c, world, 2), parentHashes, last); err != nil {
			return nil, err
		}
	}
	// Deleting the PromptPlatform brings back the parent's fan-out's renders.
	if err := h.platformPhases(ctx, i, world, rr, platformCreatedHashes, platformEditedHashes, parentHashes, last); err != nil {
		return nil, err
	}

	// The last round's manager is measured at rest too, with every Persona
	// it rendered: its ClusterPromptLayer and Personas stay.
	final := last || rr.timeout()
	if final {
		if err := h.measureSteadyState(ctx); err != nil {
			return nil, err
		}
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
// trailed it. A timeout is not an error: it is returned, to be reported.
func (h *harness) fanOutPhase(ctx context.Context, name string, w *world, edit func(context.Context) error, want map[string]string, last bool) (start time.Time, configMaps, statuses time.Duration, timedOut string, err error) {
	ph, err := h.r.beginManaged(name, h.procs, h.metricsURL)
	if err != nil {
		return start, 0, 0, "", err
	}
	if last {
		h.prof.start(ctx, name)
	}
	start, configMaps, statuses, err = fanOut(ctx, h.c, h.procs, w, name, edit, want, fanOutTimeout)
	if isTimeout(err) {
		timedOut = err.Error()
		step("  %v", err)
	} else if err != nil {
		return start, 0, 0, "", err
	} else {
		step("  %s (every status current after %s)", configMaps.Round(time.Millisecond), statuses.Round(time.Millisecond))
	}
	if err := h.r.endManaged(ctx, ph, h.metricsURL); err != nil {
		return start, 0, 0, "", err
	}
	step("waiting until the manager has written nothing for %s", settleQuiet)
	return start, configMaps, statuses, timedOut, h.r.settleManaged(ctx, ph, h.metricsURL, settleQuiet)
}

// floorTurn is which of a round's two floor measurements is being made.
type floorTurn struct {
	// namespace and phase tell its namespaces and phases from the other
	// turn's.
	namespace, phase string
	// of is the measurement of a bracket this turn fills.
	of func(*bracket) *timed
}

var (
	before = floorTurn{of: func(b *bracket) *timed { return &b.before }}
	after  = floorTurn{namespace: "-after", phase: ", after the phases", of: func(b *bracket) *timed { return &b.after }}
)

// floors measures the four floors of round i with a bare client, without
// the webhook and with the manager stopped, so that nobody watches what the
// bare client writes, into the turn's half of each of rr's brackets.
func (h *harness) floors(ctx context.Context, i int, turn floorTurn, rr *roundResult) error {
	floorNS, specNS := fmt.Sprintf("scale-floor-%d%s", i, turn.namespace), fmt.Sprintf("scale-floor-spec-%d%s", i, turn.namespace)
	// Labelled as the round's measured namespace, and rendered with its
	// ClusterPromptLayer, so the floors write what the operator writes.
	for _, ns := range []string{floorNS, specNS} {
		if err := h.createNamespace(ctx, ns, roundLabels(i)); err != nil {
			return err
		}
	}
	step("round %d: rendering %d personas offline for the floors", i, h.o.n)
	floor, err := newWorld(floorNS, i, h.o.n, true, created)
	if err != nil {
		return err
	}
	floorEdited, err := newWorld(floorNS, i, h.o.n, true, layerEdited)
	if err != nil {
		return err
	}
	spec, err := newWorld(specNS, i, h.o.n, true, created)
	if err != nil {
		return err
	}
	specEdited, err := newWorld(specNS, i, h.o.n, true, layerEdited)
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
		into *timed
		do   func() (time.Duration, error)
	}{
		{"convergence floor: a bare client creates the objects, each ConfigMap and status", turn.of(&rr.floors.convergence),
			func() (time.Duration, error) { return convergenceFloor(ctx, c, floor, workers, false) }},
		{"fan-out floor: a bare client updates the ConfigMaps", turn.of(&rr.floors.fanOut),
			func() (time.Duration, error) { return fanOutFloor(ctx, c, floor, floorEdited.renders, workers, false) }},
		{"convergence floor with Events: as above, plus each Rendered Event", turn.of(&rr.floors.convergenceSpec),
			func() (time.Duration, error) { return convergenceFloor(ctx, c, spec, workers, true) }},
		{"fan-out floor with status: each ConfigMap and status", turn.of(&rr.floors.fanOutSpec),
			func() (time.Duration, error) { return fanOutFloor(ctx, c, spec, specEdited.renders, workers, true) }},
	}
	for _, f := range floors {
		name, what, _ := strings.Cut(f.name, ":")
		step("round %d: %s%s:%s (%d personas, %d workers)", i, name, turn.phase, what, h.o.n, workers)
		ph := h.r.begin(name+turn.phase, h.procs, nil)
		start := time.Now()
		if f.into.took, err = f.do(); err != nil {
			return err
		}
		f.into.mid = midway(start, f.into.took)
		h.r.end(ph, nil)
		step("  %s", f.into.took.Round(time.Millisecond))
	}
	for _, ns := range []string{floorNS, specNS} {
		if err := deleteAll(ctx, c, ns); err != nil {
			return err
		}
	}
	return hooks.restore(ctx, c)
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
	h.r.addRenderFailures(final)
	return nil
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

// addRenderFailures adds the render failures of a manager's metrics, read
// before it stops: every manager's count.
func (r *report) addRenderFailures(s scrape.Snapshot) {
	r.renderFailures += s.Sum("persona_render_failures_total", nil)
}
