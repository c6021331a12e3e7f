package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// adjacentFloors measures the bare fan-out floor beside the fan-outs, with
// the manager up: before a round's first fan-out and after each one, once
// it has settled. The brackets stand minutes away from a fan-out, and the
// machine's pace can move twice over between them; these stand seconds
// away. They update ConfigMaps of their own, in a namespace of their own,
// with the data the operator's hold (their prompts, revision.json and
// annotations), but without the operator's labels and owner: no watch of
// the manager selects them, so it stays idle while they are written, as
// with the brackets' manager stopped.
type adjacentFloors struct {
	c       client.Client
	workers int
	// w holds the ConfigMaps; renders are the two sets of data they take
	// in turn, so that each measurement changes every one of them.
	w       *world
	renders [2][]*rendered
	// into are the floors of the round they are taken in; measured is
	// how many have been taken, passes how many passes they made.
	into             *roundFloors
	measured, passes int
	// collect makes kube-apiserver collect its garbage before each.
	collect func(context.Context) error
	// procs are the processes whose CPU each pass reports, beside the
	// CPU a fan-out's wave used until its last ConfigMap.
	procs *processes
}

// adjacentNamespace is the namespace round i's adjacent floors write in:
// no ClusterPromptLayer selects it and no Persona lives in it.
func adjacentNamespace(i int) string { return fmt.Sprintf("scale-adjacent-%d", i) }

// newAdjacentFloors renders round i's N Personas offline twice, as created
// and as the PromptLayer edit renders them, and creates their ConfigMaps,
// unlabelled and unowned, in the round's adjacent namespace.
func (h *harness) newAdjacentFloors(ctx context.Context, i int, into *roundFloors) (*adjacentFloors, error) {
	ns := adjacentNamespace(i)
	step("round %d: creating %d ConfigMaps in namespace %s for the fan-out floors beside the fan-outs", i, h.o.n, ns)
	// The offline render gives the namespace the round's labels, so the
	// renders carry the round's ClusterPromptLayer, as the measured
	// Personas' do; the Namespace created has no label, and no
	// ClusterPromptLayer selects it.
	created, err := newWorld(ns, i, h.o.n, true, created)
	if err != nil {
		return nil, err
	}
	edited, err := newWorld(ns, i, h.o.n, true, layerEdited)
	if err != nil {
		return nil, err
	}
	if err := h.createNamespace(ctx, ns, nil); err != nil {
		return nil, err
	}
	a := &adjacentFloors{c: h.c, workers: h.o.workers, w: created, renders: [2][]*rendered{edited.renders, created.renders}, into: into,
		collect: h.collectAPIServerGarbage, procs: &h.procs}
	a.w.live, a.w.cms, a.w.delivered = a.w.personas, make([]*corev1.ConfigMap, h.o.n), 1
	err = parallel(ctx, h.o.workers, h.o.n, func(ctx context.Context, k int) error {
		cm := adjacentConfigMap(a.w.personas[k], a.w.renders[k])
		if err := h.c.Create(ctx, cm); err != nil {
			return fmt.Errorf("adjacent floor: create ConfigMap %s: %w", cm.Name, err)
		}
		a.w.cms[k] = cm
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// adjacentConfigMap is the ConfigMap of p's first revision, as the floors
// write it, without the operator's labels and owner.
func adjacentConfigMap(p *v1alpha1.Persona, r *rendered) *corev1.ConfigMap {
	cm, _ := numberRevision(r, 1, v1alpha1.RevisionInput{Kind: "Persona", Namespace: p.Namespace, Name: p.Name, Generation: 1})
	cm.Labels, cm.OwnerReferences = nil, nil
	return cm
}

// measure takes the next adjacent floor: the k-th is taken before fan-out
// k and after fan-out k-1. It is the median of adjacentFloorPasses passes,
// each after kube-apiserver has collected its garbage.
func (a *adjacentFloors) measure(ctx context.Context) error {
	k := a.measured
	if k >= len(a.into.adjacent) {
		return fmt.Errorf("adjacent floor %d: a round has %d", k+1, len(a.into.adjacent))
	}
	step("fan-out floor beside the fan-outs (%d of %d): a bare client updates %d ConfigMaps no watch of the manager selects, %d times",
		k+1, len(a.into.adjacent), len(a.w.cms), adjacentFloorPasses)
	passes := make([]timed, adjacentFloorPasses)
	for j := range passes {
		if err := a.collect(ctx); err != nil {
			return err
		}
		before := a.procs.cpu()
		start := time.Now()
		took, err := fanOutFloor(ctx, a.c, a.w, a.renders[a.passes%2], a.workers, false, a.w.delivered+1)
		if err != nil {
			return err
		}
		step("    pass %d: %s", j+1, a.procs.cpu().minus(before))
		a.passes++
		passes[j] = timed{took: took, mid: midway(start, took)}
	}
	a.into.adjacent[k] = medianPass(passes)
	a.measured++
	step("    %s, the median of %s", a.into.adjacent[k].took.Round(time.Millisecond), passesText(passes))
	// Its garbage is the API server's to collect before the phase it
	// stands beside, as a phase's is before the next.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(adjacentFloorRest):
		return nil
	}
}

// adjacentFloorPasses is how many times a floor beside the fan-outs updates
// every ConfigMap. A pass at 2,000 Personas lasts about two seconds, and
// single passes spread up to 1.36× within a round, as much as a fan-out's
// margin: the median of three says what the API server gives, not what
// one moment of the machine did.
const adjacentFloorPasses = 3

// medianPass is the pass of median duration, with the moment halfway
// through it; passes is not empty.
func medianPass(passes []timed) timed {
	sorted := slices.SortedFunc(slices.Values(passes), func(a, b timed) int { return cmp.Compare(a.took, b.took) })
	return sorted[(len(sorted)-1)/2]
}

// passesText is the passes' durations, in the order they were taken.
func passesText(passes []timed) string {
	text := make([]string, len(passes))
	for i, p := range passes {
		text[i] = p.took.Round(time.Millisecond).String()
	}
	return strings.Join(text, ", ")
}

// adjacentFloorRest is the pause after an adjacent floor.
const adjacentFloorRest = 2 * time.Second

// remove deletes the adjacent floors' ConfigMaps.
func (a *adjacentFloors) remove(ctx context.Context) error {
	return deleteAll(ctx, a.c, a.w.ns)
}
