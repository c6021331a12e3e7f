package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// The restart phase kills the manager, as a crash or a lost node does, and
// starts a new one while N Personas are rendered and nothing changed.
const (
	// restartEditTimeout bounds the wait for the edit made at the new
	// process's start to reach its ConfigMap.
	restartEditTimeout = 5 * time.Minute
	// restartTarget is the edit's time over the floor: a bare client's
	// list of every kind the manager caches.
	restartTarget = 1.5
)

// restartResult is what one restart measured.
type restartResult struct {
	// floor is how long a bare client takes to list, at once, every kind
	// the manager caches, as its informers do when it starts.
	floor time.Duration
	// informerFloor is how long caches of the harness's own take to start
	// and sync an informer of each of those kinds, as the manager's do.
	informerFloor time.Duration
	// edit is from the new process's start until an edit of one Persona
	// made at that moment (retried while the webhook is down, as a GitOps
	// agent retries) is in its ConfigMap.
	edit time.Duration
	// serving and accepted are, from the same start, when the new
	// process's webhook served and when the API server accepted the edit:
	// where the edit's time went.
	serving, accepted time.Duration
	// changed is the objects, other than the edited Persona, its ConfigMap
	// and its Events, written from the kill until the new manager settled:
	// writes of a restart when nothing changed.
	changed []string
	// flips is the Personas whose Ready read other than True in that time.
	flips []string
	// managerWrites is the new process's API writes by method until it
	// settled, the edit's included.
	managerWrites map[string]float64
	// peakRSS is the new process's peak RSS (VmHWM) once it settled: what
	// listing every object at start costs beside what a running manager
	// holds.
	peakRSS int64
}

// measureRestarts kills the running manager and starts a new one, -restarts
// times, in the last round's namespace with every Persona rendered; the
// manager runs, settled, when it returns.
func (h *harness) measureRestarts(ctx context.Context) error {
	ns := convergeNamespace(h.r.round)
	for k := 1; k <= h.o.restarts; k++ {
		step("restart %d of %d: killing the manager at %d personas, listing every kind it caches with a bare client, starting a new one and editing Persona %s at that moment", k, h.o.restarts, h.o.n, restartEdited)
		res, err := h.restart(ctx, ns, k)
		if err != nil {
			return fmt.Errorf("restart %d: %w", k, err)
		}
		h.r.restarts = append(h.r.restarts, res)
		step("  edit in its ConfigMap %s after the start (webhook serving after %s, edit accepted after %s; floor %s); %d objects written that nothing changed, %d Ready flips; the new manager's writes %v",
			res.edit.Round(time.Millisecond), res.serving.Round(time.Millisecond), res.accepted.Round(time.Millisecond), res.floor.Round(time.Millisecond), len(res.changed), len(res.flips), res.managerWrites)
	}
	return nil
}

// restartEdited is the Persona each restart edits.
var restartEdited = persona("", 0).Name

// restart measures one restart: k makes its edit its own.
func (h *harness) restart(ctx context.Context, ns string, k int) (*restartResult, error) {
	res := &restartResult{}
	changes, err := watchChanges(ctx, h.c, ns)
	if err != nil {
		return nil, err
	}
	defer changes.stop()
	marker := fmt.Sprintf("Restart edit %d.", k)
	delivered, err := watchDelivery(ctx, h.c, ns, delivery.ConfigMapName(restartEdited), marker)
	if err != nil {
		return nil, err
	}

	// The killed manager's failures count, as every manager's do.
	if s, err := scrape.Get(ctx, h.metricsURL); err == nil {
		h.r.addManagerTotals(s)
	}
	if err := h.manager.Kill(); err != nil {
		return nil, err
	}
	h.procs.manager = 0
	if res.floor, err = cachedKindsFloor(ctx, h.c); err != nil {
		return nil, err
	}
	if res.informerFloor, err = cachedKindsInformerFloor(ctx, h.cfg, h.c); err != nil {
		return nil, err
	}

	editCtx, cancel := context.WithTimeout(ctx, restartEditTimeout)
	defer cancel()
	edited := make(chan error, 1)
	start := time.Now()
	go func() { edited <- editUntilAccepted(editCtx, h.c, ns, marker) }()
	if err := h.manager.Start(ctx); err != nil {
		return nil, err
	}
	res.serving = time.Since(start)
	h.procs.manager = h.manager.PID()
	// With -profile, the new process's first seconds: its lists, its
	// caches' sync and the first renders; and its heap at its peak RSS,
	// which a restart reaches as it lists every kind at once.
	phase := fmt.Sprintf("restart %d", k)
	h.prof.start(ctx, phase)
	h.prof.watchPeak(ctx, phase, h.procs.manager)
	if err := <-edited; err != nil {
		return nil, err
	}
	res.accepted = time.Since(start)
	select {
	case at := <-delivered:
		res.edit = at.Sub(start)
	case <-editCtx.Done():
		return nil, fmt.Errorf("the edit of Persona %s made at the new manager's start is not in its ConfigMap after %s", restartEdited, restartEditTimeout)
	}

	if _, err := settle(ctx, h.metricsURL, settleQuiet, settleLimit); err != nil {
		return nil, err
	}
	h.prof.heap(ctx, phase)
	if res.peakRSS, err = procStatusBytes(h.manager.PID(), "VmHWM"); err != nil {
		return nil, err
	}
	s, err := scrape.Get(ctx, h.metricsURL)
	if err != nil {
		return nil, err
	}
	res.managerWrites = map[string]float64{}
	for m, v := range s.Requests() {
		if slices.Contains(scrape.WriteMethods, m) && v > 0 {
			res.managerWrites[m] = v
		}
	}
	res.changed, res.flips, err = changes.result()
	return res, err
}

// editUntilAccepted sets the edited Persona's prompt to end with marker,
// trying again while the webhook, which the manager serves, is down.
func editUntilAccepted(ctx context.Context, c client.Client, ns, marker string) error {
	for {
		var p v1alpha1.Persona
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: restartEdited}, &p)
		if err == nil {
			p.Spec.Prompt = persona(ns, 0).Spec.Prompt + marker + "\n"
			if err = c.Update(ctx, &p); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("edit Persona %s: %w (last: %v)", restartEdited, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// watchDelivery reports when ConfigMap name of ns first holds marker in its
// data. Its watch carries that one ConfigMap whole.
func watchDelivery(ctx context.Context, c client.WithWatch, ns, name, marker string) (<-chan time.Time, error) {
	byName := fields.OneTermEqualSelector("metadata.name", name)
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: byName}); err != nil {
		return nil, fmt.Errorf("list ConfigMap %s: %w", name, err)
	}
	w, err := c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns),
		&client.ListOptions{FieldSelector: byName, Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		return nil, fmt.Errorf("watch ConfigMap %s: %w", name, err)
	}
	at := make(chan time.Time, 1)
	go func() {
		defer w.Stop()
		for e := range w.ResultChan() {
			cm, ok := e.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			for _, v := range cm.Data {
				if strings.Contains(v, marker) {
					at <- time.Now()
					return
				}
			}
		}
	}()
	return at, nil
}

// changeWatch follows, from before the kill, every object of the measured
// namespace the manager writes (Personas, PromptLayers, the metadata of
// ConfigMaps, Events) and the ClusterPromptLayers.
type changeWatch struct {
	ns       string
	watches  []watch.Interface
	wg       sync.WaitGroup
	mu       sync.Mutex
	changed  map[string]bool
	flips    map[string]bool
	watchErr error
	// stopping is set once the watches are being stopped: an error then
	// is their end, not a missed change.
	stopping bool
}

func watchChanges(ctx context.Context, c client.WithWatch, ns string) (*changeWatch, error) {
	cw := &changeWatch{ns: ns, changed: map[string]bool{}, flips: map[string]bool{}}
	kinds := []struct {
		kind       string
		list       func() client.ObjectList
		namespaced bool
	}{
		{"Persona", func() client.ObjectList { return &v1alpha1.PersonaList{} }, true},
		{"PromptLayer", func() client.ObjectList { return &v1alpha1.PromptLayerList{} }, true},
		{"ConfigMap", configMapMetadataList, true},
		{"Event", func() client.ObjectList { return &eventsv1.EventList{} }, true},
		{"ClusterPromptLayer", func() client.ObjectList { return &v1alpha1.ClusterPromptLayerList{} }, false},
	}
	for _, k := range kinds {
		var opts []client.ListOption
		if k.namespaced {
			opts = append(opts, client.InNamespace(ns))
		}
		// The metadata of a list is enough for its resource version.
		list := k.list()
		if err := c.List(ctx, list, append(opts, client.Limit(1))...); err != nil {
			cw.stop()
			return nil, fmt.Errorf("list %s: %w", k.kind, err)
		}
		rv := list.(metav1.ListInterface).GetResourceVersion()
		w, err := c.Watch(ctx, k.list(), append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...)
		if err != nil {
			cw.stop()
			return nil, fmt.Errorf("watch %s: %w", k.kind, err)
		}
		cw.watches = append(cw.watches, w)
		cw.wg.Go(func() { cw.follow(k.kind, w) })
	}
	return cw, nil
}

// follow records every change w reports until it is stopped.
func (cw *changeWatch) follow(kind string, w watch.Interface) {
	for e := range w.ResultChan() {
		cw.mu.Lock()
		switch obj := e.Object.(type) {
		case *metav1.Status:
			if !cw.stopping {
				cw.watchErr = fmt.Errorf("watch of %s ended: %s", kind, obj.Message)
			}
		case client.Object:
			if e.Type == watch.Bookmark || cw.edited(kind, obj) {
				break
			}
			cw.changed[kind+"/"+obj.GetName()] = true
			if p, ok := obj.(*v1alpha1.Persona); ok && !meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ReadyCondition) {
				cw.flips[p.Name] = true
			}
		}
		cw.mu.Unlock()
	}
}

// edited reports whether obj is the edited Persona, its ConfigMap, one of
// its snapshots (the edit's, and the one it prunes) or an Event about it:
// what the edit is expected to write.
func (cw *changeWatch) edited(kind string, obj client.Object) bool {
	switch kind {
	case "Persona":
		return obj.GetName() == restartEdited
	case "ConfigMap":
		persona, _, snapshot := delivery.SnapshotOf(obj.GetName())
		return obj.GetName() == delivery.ConfigMapName(restartEdited) || snapshot && persona == restartEdited
	case "Event":
		ev := obj.(*eventsv1.Event)
		return ev.Regarding.Kind == v1alpha1.PersonaKind && ev.Regarding.Name == restartEdited
	}
	return false
}

func (cw *changeWatch) stop() {
	cw.mu.Lock()
	cw.stopping = true
	cw.mu.Unlock()
	for _, w := range cw.watches {
		w.Stop()
	}
	cw.wg.Wait()
	cw.watches = nil
}

// result is the objects changed and the Personas whose Ready flipped,
// sorted; an error when a watch ended early, for then some were missed.
func (cw *changeWatch) result() (changed, flips []string, err error) {
	cw.stop()
	cw.mu.Lock()
	defer cw.mu.Unlock()
	for name := range cw.changed {
		changed = append(changed, name)
	}
	for name := range cw.flips {
		flips = append(flips, name)
	}
	slices.Sort(changed)
	slices.Sort(flips)
	return changed, flips, cw.watchErr
}
