package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// The PromptPlatform's phases: it is created, edited and deleted after the
// parent's fan-out. Every Persona of the cluster renders on it and none of
// the measured ones overrides the sections it sets, so each of the three
// re-renders every Persona: the largest fan-out of the API. Deleting it
// last leaves the round's Personas as the parent's fan-out left them, so
// the floors after the phases, the steady state and the restarts measure
// what they measured before the PromptPlatform had phases.
const (
	platformCreatePhase = "PromptPlatform create fan-out"
	platformEditPhase   = "PromptPlatform fan-out"
	platformDeletePhase = "PromptPlatform delete fan-out"
)

// createPlatform creates the PromptPlatform at its first revision.
func createPlatform(c client.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := c.Create(ctx, promptPlatform(1)); err != nil {
			return fmt.Errorf("create PromptPlatform %s: %w", v1alpha1.PromptPlatformName, err)
		}
		return nil
	}
}

// editPlatform sets the PromptPlatform's completion section to its
// revision version.
func editPlatform(c client.Client, version int) func(context.Context) error {
	return func(ctx context.Context) error {
		var pp v1alpha1.PromptPlatform
		if err := c.Get(ctx, client.ObjectKey{Name: v1alpha1.PromptPlatformName}, &pp); err != nil {
			return fmt.Errorf("get PromptPlatform %s: %w", v1alpha1.PromptPlatformName, err)
		}
		pp.Spec.Sections = promptPlatform(version).Spec.Sections
		if err := c.Update(ctx, &pp); err != nil {
			return fmt.Errorf("update PromptPlatform %s: %w", v1alpha1.PromptPlatformName, err)
		}
		return nil
	}
}

// deletePlatform deletes the PromptPlatform, if it exists: as a phase's
// edit, and when a round that timed out cleans up.
func deletePlatform(c client.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		pp := &v1alpha1.PromptPlatform{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PromptPlatformName}}
		if err := c.Delete(ctx, pp); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete PromptPlatform %s: %w", v1alpha1.PromptPlatformName, err)
		}
		return nil
	}
}

// platformPhases measures the PromptPlatform's create, edit and delete in
// turn, each until every ConfigMap, then every status, has the hash
// rendered offline; after a timeout, none of the rest. After a timeout or
// an error the PromptPlatform may still exist: the round's cleanup deletes it.
func (h *harness) platformPhases(ctx context.Context, i int, w *world, rr *roundResult, created, edited, deleted map[string]string, last bool) error {
	phases := []struct {
		name, what string
		edit       func(context.Context) error
		want       map[string]string
		into       *fanOutResult
	}{
		{platformCreatePhase, "create PromptPlatform " + v1alpha1.PromptPlatformName, createPlatform(h.c), created, &rr.platformCreate},
		{platformEditPhase, "edit PromptPlatform " + v1alpha1.PromptPlatformName, editPlatform(h.c, 2), edited, &rr.platformEdit},
		{platformDeletePhase, "delete PromptPlatform " + v1alpha1.PromptPlatformName, deletePlatform(h.c), deleted, &rr.platformDelete},
	}
	for _, p := range phases {
		if rr.timeout() {
			return nil
		}
		step("round %d: %s: %s until all %d ConfigMaps, then all statuses, have the hash rendered offline", i, p.name, p.what, h.o.n)
		var err error
		if *p.into, err = h.fanOutPhase(ctx, p.name, w, p.edit, p.want, last); err != nil {
			return err
		}
	}
	return nil
}
