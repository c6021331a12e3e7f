package main

import (
	"context"
	"fmt"
	"time"

	"github.com/persona-operator/persona-operator/test/scrape"
)

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

// settle waits until the manager is idle: its work queues are empty and it
// wrote nothing for quiet. It returns how long that took; after limit it
// gives up with an error.
func settle(ctx context.Context, metricsURL string, quiet, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	quietSince, last := time.Now(), -1.0
	for {
		s, err := scrape.Get(ctx, metricsURL)
		if err != nil {
			return 0, err
		}
		writes, depth := s.Writes(), s.Sum("workqueue_depth", nil)
		if writes != last || depth != 0 {
			quietSince, last = time.Now(), writes
		}
		if time.Since(quietSince) >= quiet {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("the manager did not settle within %s (queue depth %.0f, still writing)", limit, depth)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// steady counts the manager's API writes, by method, during window.
func steady(ctx context.Context, metricsURL string, window time.Duration) (map[string]float64, error) {
	before, err := scrape.Get(ctx, metricsURL)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(window):
	}
	after, err := scrape.Get(ctx, metricsURL)
	if err != nil {
		return nil, err
	}
	b, a := before.Requests(), after.Requests()
	out := map[string]float64{}
	for m, v := range a {
		if d := v - b[m]; d != 0 {
			out[m] = d
		}
	}
	return out, nil
}
