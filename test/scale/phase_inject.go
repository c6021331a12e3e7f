package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/inject"
)

// The pod injection's figures: the latency it adds to a pod create, and
// the manager's memory for the labelled pods it watches.
const (
	injectNamespace = "scale-inject"
	injectPersona   = "agent"
	// canaryPersona has a canary in flight while the latencies are taken.
	canaryPersona = "agent-canary"
	// labelledPods are the pods created for the memory figure.
	labelledPods = 2000
	// injectHeapLimit is what labelledPods may add to the manager's live
	// heap.
	injectHeapLimit = 20 << 20
)

// measureInjection times sequential pod creates with the injection and
// without it, in alternating blocks, then the manager's live heap and RSS
// before and after labelledPods more labelled pods.
func (h *harness) measureInjection(ctx context.Context) error {
	step("injection: %d sequential pod creates with the pod injection, %d of a Persona with a canary in flight and %d without the injection, in %d alternating blocks; then %d labelled pods",
		h.o.webhookSamples, h.o.webhookSamples, h.o.webhookSamples, webhookBlocks, labelledPods)
	if err := h.createNamespace(ctx, injectNamespace, nil); err != nil {
		return err
	}
	if err := h.c.Create(ctx, smallPersona(injectNamespace, injectPersona)); err != nil {
		return fmt.Errorf("create Persona %s: %w", injectPersona, err)
	}
	if err := waitCurrentRevision(ctx, h.c, injectPersona); err != nil {
		return err
	}
	if err := startCanary(ctx, h.c); err != nil {
		return err
	}
	var err error
	if h.r.injectOn, h.r.injectCanary, h.r.injectOff, err = h.injectionLatency(ctx); err != nil {
		return err
	}
	before, err := h.managerMemory(ctx)
	if err != nil {
		return err
	}
	if err := createLabelledPods(ctx, h.c, h.o.workers); err != nil {
		return err
	}
	// The metadata cache has them once the status counts every injected pod.
	injected := &metav1.PartialObjectMetadataList{}
	injected.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := h.c.List(ctx, injected, client.InNamespace(injectNamespace), client.MatchingLabels{inject.PersonaLabel: injectPersona}, client.HasLabels{inject.RevisionLabel}); err != nil {
		return fmt.Errorf("list the injected pods: %w", err)
	}
	if err := waitAgents(ctx, h.c, int32(len(injected.Items))); err != nil {
		return err
	}
	after, err := h.managerMemory(ctx)
	if err != nil {
		return err
	}
	h.r.injectLiveHeapGrowth, h.r.injectRSSGrowth = after.liveHeap-before.liveHeap, after.rss-before.rss
	return nil
}

// memoryReading is what the manager holds: its live heap, after a
// collection forced for it, and then its RSS.
type memoryReading struct{ liveHeap, rss int64 }

// managerMemory reads the manager's memory. The live heap is what the pod
// figure's target measures: the RSS also holds whatever the heap grew to
// since the last collection (up to twice the live heap at Go's default
// GOGC) and the pages the collector has freed but not yet returned, which
// two readings with no collection between them differed by as much as
// the pods.
func (h *harness) managerMemory(ctx context.Context) (memoryReading, error) {
	live, err := liveHeap(ctx, h.pprofURL)
	if err != nil {
		return memoryReading{}, fmt.Errorf("the manager's live heap: %w", err)
	}
	rss, err := procStatusBytes(h.manager.PID(), "VmRSS")
	if err != nil {
		return memoryReading{}, err
	}
	return memoryReading{liveHeap: live, rss: rss}, nil
}

func agentPod(name string) *corev1.Pod { return podOf(injectPersona, name) }

// podOf is a pod of persona named name.
func podOf(persona, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: injectNamespace, Labels: map[string]string{inject.PersonaLabel: persona}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "busybox"}}},
	}
}

func waitCurrentRevision(ctx context.Context, c client.Client, persona string) error {
	return poll(ctx, 60*time.Second, func() (bool, error) {
		var p v1alpha1.Persona
		err := c.Get(ctx, client.ObjectKey{Namespace: injectNamespace, Name: persona}, &p)
		return err == nil && p.Status.CurrentRevision > 0, nil
	})
}

// startCanary creates canaryPersona with a release of 10% of new pods that
// pauses until promoted, and edits it: its revision 2 is a canary beside
// stable revision 1, so each of its pods' injection decides which it gets.
func startCanary(ctx context.Context, c client.Client) error {
	p := smallPersona(injectNamespace, canaryPersona)
	weight := int32(10)
	p.Spec.Rollout = &v1alpha1.Rollout{Steps: []v1alpha1.RolloutStep{{SetWeight: &weight}, {Pause: &v1alpha1.RolloutPause{}}}}
	if err := c.Create(ctx, p); err != nil {
		return fmt.Errorf("create Persona %s: %w", canaryPersona, err)
	}
	if err := waitCurrentRevision(ctx, c, canaryPersona); err != nil {
		return err
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		return err
	}
	p.Spec.Prompt += " Edited."
	if err := c.Update(ctx, p); err != nil {
		return fmt.Errorf("edit Persona %s: %w", canaryPersona, err)
	}
	return poll(ctx, 60*time.Second, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(p), p)
		return err == nil && p.Status.Canary != nil && p.Status.Canary.Phase == v1alpha1.CanaryPaused, nil
	})
}

func waitAgents(ctx context.Context, c client.Client, n int32) error {
	return poll(ctx, 5*time.Minute, func() (bool, error) {
		var p v1alpha1.Persona
		err := c.Get(ctx, client.ObjectKey{Namespace: injectNamespace, Name: injectPersona}, &p)
		return err == nil && p.Status.Agents != nil && p.Status.Agents.Current >= n, nil
	})
}

func poll(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// podCreateLatencies times samples sequential creates of labelled pods,
// after warm creates that are not counted; injected tells whether each must
// have got the prompt's volume.
func podCreateLatencies(ctx context.Context, c client.Client, persona, prefix string, samples, warm int, injected bool) (latencies, error) {
	var out latencies
	for i := range warm + samples {
		pod := podOf(persona, fmt.Sprintf("%s-%04d", prefix, i))
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		start := time.Now()
		err := c.Create(cctx, pod)
		elapsed := time.Since(start)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
		if got := slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == inject.VolumeName }); got != injected {
			return nil, fmt.Errorf("pod %s: injected %v, want %v", pod.Name, got, injected)
		}
		if i >= warm {
			out = append(out, elapsed)
		}
	}
	slices.Sort(out)
	return out, nil
}

// injectionLatency is webhookLatency for pods: the MutatingWebhookConfigurations
// are removed for the blocks without, and restored. Pods of canaryPersona,
// whose canary is in flight, are timed in blocks of their own.
func (h *harness) injectionLatency(ctx context.Context) (on, canary, off latencies, err error) {
	samples := h.o.webhookSamples
	blocks := min(webhookBlocks, samples)
	for b := range blocks {
		size := samples/blocks + map[bool]int{true: 1}[b < samples%blocks]
		l, err := podCreateLatencies(ctx, h.c, injectPersona, fmt.Sprintf("with-%d", b), size, webhookWarmCreates, true)
		if err != nil {
			return nil, nil, nil, err
		}
		on = append(on, l...)
		if l, err = podCreateLatencies(ctx, h.c, canaryPersona, fmt.Sprintf("canary-%d", b), size, webhookWarmCreates, true); err != nil {
			return nil, nil, nil, err
		}
		canary = append(canary, l...)
		var list admissionregistrationv1.MutatingWebhookConfigurationList
		if err := h.c.List(ctx, &list); err != nil {
			return nil, nil, nil, fmt.Errorf("list the mutating webhook configurations: %w", err)
		}
		if len(list.Items) == 0 {
			return nil, nil, nil, errors.New("no MutatingWebhookConfiguration is installed")
		}
		for _, mwc := range list.Items {
			if err := h.c.Delete(ctx, &mwc); err != nil {
				return nil, nil, nil, fmt.Errorf("delete %s: %w", mwc.Name, err)
			}
		}
		if err := waitInjection(ctx, h.c, false); err != nil {
			return nil, nil, nil, err
		}
		l, err = podCreateLatencies(ctx, h.c, injectPersona, fmt.Sprintf("without-%d", b), size, webhookWarmCreates, false)
		if err != nil {
			return nil, nil, nil, err
		}
		off = append(off, l...)
		for _, mwc := range list.Items {
			restored := mwc.DeepCopy()
			restored.ObjectMeta = metav1.ObjectMeta{Name: mwc.Name, Labels: mwc.Labels, Annotations: mwc.Annotations}
			if err := h.c.Create(ctx, restored); err != nil {
				return nil, nil, nil, fmt.Errorf("restore %s: %w", mwc.Name, err)
			}
		}
		if err := waitInjection(ctx, h.c, true); err != nil {
			return nil, nil, nil, err
		}
	}
	slices.Sort(on)
	slices.Sort(canary)
	slices.Sort(off)
	return on, canary, off, nil
}

// waitInjection waits until a dry-run pod create is injected (active) or not.
func waitInjection(ctx context.Context, c client.Client, active bool) error {
	return poll(ctx, 60*time.Second, func() (bool, error) {
		pod := agentPod("probe")
		if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
			return false, nil // not served yet: retry
		}
		return slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == inject.VolumeName }) == active, nil
	})
}

// createLabelledPods creates labelledPods labelled pods with workers
// concurrent requests.
func createLabelledPods(ctx context.Context, c client.Client, workers int) error {
	names := make(chan string)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for name := range names {
				if err := c.Create(ctx, agentPod(name)); err != nil {
					errs <- fmt.Errorf("create pod %s: %w", name, err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range labelledPods {
		select {
		case names <- fmt.Sprintf("labelled-%04d", i):
		case err = <-errs:
			break feed
		}
	}
	close(names)
	wg.Wait()
	close(errs)
	if err != nil {
		return err
	}
	return <-errs
}
