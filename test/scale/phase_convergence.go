package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// convergence creates the world's objects as the floor does and returns the
// time from the first create until every Persona (the parent too) is
// Ready=True for its current generation, and how long the creates took.
func convergence(ctx context.Context, c client.WithWatch, w *world, workers int, timeout time.Duration) (total, creates time.Duration, err error) {
	t, err := track(ctx, c, w.ns, "convergence: Ready personas", func() client.ObjectList { return &v1alpha1.PersonaList{} },
		nil, len(w.personas)+1, personaReady)
	if err != nil {
		return 0, 0, err
	}
	defer t.stop()
	start := time.Now()
	if err := w.createShared(ctx, c); err != nil {
		return 0, 0, err
	}
	err = parallel(ctx, workers, len(w.personas), func(ctx context.Context, i int) error {
		if err := c.Create(ctx, w.personas[i].DeepCopy()); err != nil {
			return fmt.Errorf("create Persona %s: %w", w.personas[i].Name, err)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	creates = time.Since(start)
	doneAt, err := t.wait(ctx, start, timeout)
	if err != nil {
		return 0, creates, err
	}
	return doneAt.Sub(start), creates, nil
}

// personaReady: Ready=True, for the current generation.
func personaReady(obj client.Object) bool {
	p := obj.(*v1alpha1.Persona)
	c := meta.FindStatusCondition(p.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == p.Generation && p.Status.ObservedGeneration == p.Generation
}
