package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	personawebhook "github.com/persona-operator/persona-operator/internal/webhook"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// webhookNamespace holds the webhook probes and latency samples.
const webhookNamespace = "scale-webhook"

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
	if err := h.measureInjection(ctx); err != nil {
		return err
	}
	// The restart renders every Persona again: its failures count too.
	s, err := scrape.Get(ctx, h.metricsURL)
	if err != nil {
		return err
	}
	h.r.addManagerTotals(s)
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

// webhooks holds the ValidatingWebhookConfigurations while they are removed.
type webhooks struct {
	saved []admissionregistrationv1.ValidatingWebhookConfiguration
}

// removeWebhooks deletes every ValidatingWebhookConfiguration, saving it.
func removeWebhooks(ctx context.Context, c client.Client) (*webhooks, error) {
	var list admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list the webhook configurations: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, errors.New("no ValidatingWebhookConfiguration is installed")
	}
	w := &webhooks{}
	for _, vwc := range list.Items {
		if err := c.Delete(ctx, &vwc); err != nil {
			return w, fmt.Errorf("delete the webhook configuration %s: %w", vwc.Name, err)
		}
		w.saved = append(w.saved, vwc)
	}
	return w, nil
}

// restore creates the saved configurations again. It is idempotent.
func (w *webhooks) restore(ctx context.Context, c client.Client) error {
	if w == nil {
		return nil
	}
	for len(w.saved) > 0 {
		vwc := w.saved[0].DeepCopy()
		vwc.ObjectMeta = metav1.ObjectMeta{Name: vwc.Name, Labels: vwc.Labels, Annotations: vwc.Annotations}
		if err := c.Create(ctx, vwc); err != nil {
			return fmt.Errorf("restore the webhook configuration %s: %w", vwc.Name, err)
		}
		w.saved = w.saved[1:]
	}
	return nil
}

// waitWebhook waits until the API server calls the webhook (active) or no
// longer does: a dry-run create of a persona only the webhook refuses.
func waitWebhook(ctx context.Context, c client.Client, ns string, active bool) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.Create(ctx, invalidPersona(ns), client.DryRunAll)
		refused := err != nil && strings.Contains(err.Error(), "denied the request")
		if err != nil && !refused {
			// the webhook is registered but not served yet, or another failure: retry
			fmt.Fprintf(os.Stderr, "    (webhook probe: %v)\n", err)
		}
		if refused == active && (err == nil || refused) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook did not become %s within 60s (last probe: %v)", map[bool]string{true: "active", false: "inactive"}[active], err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// latencies are the sorted durations of sequential creates.
type latencies []time.Duration

func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	// nearest rank
	i := int(q*float64(len(l))+0.999999) - 1
	return l[min(max(i, 0), len(l)-1)]
}

// createLatencies times samples sequential creates of small personas named
// prefix-<i>, after warm creates that are not counted.
func createLatencies(ctx context.Context, c client.Client, ns, prefix string, samples, warm int) (latencies, error) {
	var out latencies
	for i := range warm + samples {
		p := smallPersona(ns, fmt.Sprintf("%s-%04d", prefix, i))
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		start := time.Now()
		err := c.Create(cctx, p)
		elapsed := time.Since(start)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("create Persona %s: %w", p.Name, err)
		}
		if i >= warm {
			out = append(out, elapsed)
		}
	}
	slices.Sort(out)
	return out, nil
}

// webhookLatency times samples sequential creates with the webhook and
// samples without it, in webhookBlocks alternating blocks; each block
// starts with webhookWarmCreates creates that are not counted. The
// webhook configuration is restored at the end.
func webhookLatency(ctx context.Context, c client.Client, ns string, samples int) (on, off latencies, err error) {
	blocks := min(webhookBlocks, samples)
	for b := range blocks {
		size := samples/blocks + map[bool]int{true: 1}[b < samples%blocks]
		l, err := createLatencies(ctx, c, ns, fmt.Sprintf("with-%d", b), size, webhookWarmCreates)
		if err != nil {
			return nil, nil, err
		}
		on = append(on, l...)
		hooks, err := removeWebhooks(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		if err := waitWebhook(ctx, c, ns, false); err != nil {
			return nil, nil, err
		}
		l, err = createLatencies(ctx, c, ns, fmt.Sprintf("without-%d", b), size, webhookWarmCreates)
		if err != nil {
			return nil, nil, err
		}
		off = append(off, l...)
		if err := hooks.restore(ctx, c); err != nil {
			return nil, nil, err
		}
		if err := waitWebhook(ctx, c, ns, true); err != nil {
			return nil, nil, err
		}
	}
	slices.Sort(on)
	slices.Sort(off)
	return on, off, nil
}
