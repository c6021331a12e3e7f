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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// convergence creates the world's objects as the floor does and returns the
// time from the first create until every Persona (the parent too) is
// Ready=True for its current generation, and how long the creates took.
func convergence(ctx context.Context, c client.WithWatch, w *world, workers int, timeout time.Duration) (total, creates time.Duration, err error) {
	t, err := track(ctx, c, w.ns, "convergence: Ready personas", func() client.ObjectList { return &v1alpha1.PersonaList{} },
		len(w.personas)+1, personaReady)
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

// fanOut makes edit and returns the time until every measured persona's
// ConfigMap carries the content hash want names (rendered offline, as the
// controller renders), and the time until every persona's status names it
// too: the controller writes a dependent's status in a pass of low
// priority, about a second after its ConfigMap, so a fan-out is over only
// then. what names the phase in progress and errors. start is when the
// edit was made, after the watches were set up.
func fanOut(ctx context.Context, c client.WithWatch, procs processes, w *world, what string, edit func(context.Context) error, want map[string]string, timeout time.Duration) (start time.Time, configMaps, statuses time.Duration, err error) {
	// The hashes before the edit, from the metadata: listing 2,000
	// rendered prompts would leave the API server tens of MB of garbage
	// to collect in the phase.
	cms := configMapMetadataList().(*metav1.PartialObjectMetadataList)
	if err := c.List(ctx, cms, client.InNamespace(w.ns)); err != nil {
		return start, 0, 0, err
	}
	measured := map[string]bool{}
	for _, p := range w.personas {
		measured[delivery.ConfigMapName(p.Name)] = true
	}
	before := map[string]string{}
	for _, cm := range cms.Items {
		if measured[cm.Name] {
			before[cm.Name] = cm.Annotations[delivery.ContentHashAnnotation]
		}
	}
	if len(before) != len(w.personas) {
		return start, 0, 0, fmt.Errorf("%s: %d of the %d ConfigMaps exist before the edit", what, len(before), len(w.personas))
	}
	for name, hash := range before {
		if want[name] == hash {
			return start, 0, 0, fmt.Errorf("%s: ConfigMap %s has the hash of the edit before it", what, name)
		}
	}
	delivered := func(obj client.Object) bool {
		_, ok := before[obj.GetName()]
		return ok && obj.GetAnnotations()[delivery.ContentHashAnnotation] == want[obj.GetName()]
	}
	cmTracker, err := track(ctx, c, w.ns, what+": updated ConfigMaps", configMapMetadataList, len(before), delivered)
	if err != nil {
		return start, 0, 0, err
	}
	defer cmTracker.stop()
	current := func(obj client.Object) bool {
		cm := delivery.ConfigMapName(obj.GetName())
		_, ok := before[cm]
		return ok && obj.(*v1alpha1.Persona).Status.ContentHash == want[cm]
	}
	statusTracker, err := track(ctx, c, w.ns, what+": current statuses", func() client.ObjectList { return &v1alpha1.PersonaList{} },
		len(before), current)
	if err != nil {
		return start, 0, 0, err
	}
	defer statusTracker.stop()
	cpuBefore := procs.cpu()
	start = time.Now()
	if err := edit(ctx); err != nil {
		return start, 0, 0, fmt.Errorf("%s: %w", what, err)
	}
	deliveredAt, err := cmTracker.wait(ctx, start, timeout)
	cpuDelivering := procs.cpu().minus(cpuBefore)
	if err != nil {
		var te *timeoutError
		if errors.As(err, &te) {
			te.detail = unexpectedHashes(ctx, c, w.ns, before, want)
		}
		return start, 0, 0, err
	}
	currentAt, err := statusTracker.wait(ctx, start, timeout)
	if err != nil {
		return start, deliveredAt.Sub(start), 0, err
	}
	step("  ConfigMaps: %s (CPU until the last: %s); statuses: %s", cmTracker.curve(start), cpuDelivering, statusTracker.curve(start))
	// The two watches are separate streams: statuses seen before the last
	// ConfigMap count from when both were done.
	return start, deliveredAt.Sub(start), max(currentAt.Sub(start), deliveredAt.Sub(start)), nil
}

// configMapMetadataList is a list of ConfigMaps by their metadata only. The
// ConfigMap tracker reads only the content-hash annotation, which the
// controller writes in the same update as the data; watching the whole
// ConfigMaps would make the API server send, and the harness decode, every
// rendered prompt on the machine being measured.
func configMapMetadataList() client.ObjectList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	return l
}

// unexpectedHashes says how many measured ConfigMaps changed to a hash
// other than the offline render's, for a fan-out that timed out.
func unexpectedHashes(ctx context.Context, c client.Client, ns string, before, want map[string]string) string {
	cms := configMapMetadataList().(*metav1.PartialObjectMetadataList)
	if err := c.List(ctx, cms, client.InNamespace(ns)); err != nil {
		return fmt.Sprintf("list the ConfigMaps: %v", err)
	}
	var names []string
	for _, cm := range cms.Items {
		old, ok := before[cm.Name]
		hash := cm.Annotations[delivery.ContentHashAnnotation]
		if ok && hash != old && hash != want[cm.Name] {
			names = append(names, cm.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return fmt.Sprintf("%d ConfigMaps changed to a hash other than the offline render's, e.g. %s", len(names), names[0])
}

// editLayer sets the shared PromptLayer's template to its revision version.
func editLayer(c client.Client, w *world, version int) func(context.Context) error {
	return func(ctx context.Context) error {
		var layer v1alpha1.PromptLayer
		if err := c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: sharedLayer}, &layer); err != nil {
			return fmt.Errorf("get PromptLayer %s: %w", sharedLayer, err)
		}
		layer.Spec.Template = new(sharedTemplate(version))
		if err := c.Update(ctx, &layer); err != nil {
			return fmt.Errorf("update PromptLayer %s: %w", sharedLayer, err)
		}
		return nil
	}
}

// editParent sets the extension of the Persona every measured Persona
// inherits to its revision version.
func editParent(c client.Client, w *world, version int) func(context.Context) error {
	return func(ctx context.Context) error {
		var p v1alpha1.Persona
		if err := c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: parentName}, &p); err != nil {
			return fmt.Errorf("get Persona %s: %w", parentName, err)
		}
		p.Spec.SystemPrompt.Extensions[0].Template = houseRules(version)
		if err := c.Update(ctx, &p); err != nil {
			return fmt.Errorf("update Persona %s: %w", parentName, err)
		}
		return nil
	}
}

// editGuardrail sets the round's ClusterPromptLayer's template to its
// revision version.
func editGuardrail(c client.Client, w *world, version int) func(context.Context) error {
	return func(ctx context.Context) error {
		var l v1alpha1.ClusterPromptLayer
		if err := c.Get(ctx, client.ObjectKey{Name: w.guardrail.Name}, &l); err != nil {
			return fmt.Errorf("get ClusterPromptLayer %s: %w", w.guardrail.Name, err)
		}
		l.Spec.Template = guardrailTemplate(version)
		if err := c.Update(ctx, &l); err != nil {
			return fmt.Errorf("update ClusterPromptLayer %s: %w", w.guardrail.Name, err)
		}
		return nil
	}
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
