package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// fanOut makes edit and returns the time until every measured persona's
// ConfigMap carries the content hash want names (rendered offline, as the
// controller renders), and the time until every persona's status names it
// too, and its snapshot holds it, the previous one pruned: the controller
// writes a dependent's snapshot and status in a pass of low priority,
// about a second after its ConfigMap, so a fan-out is over only then. what names the phase in progress and errors. start is when the
// edit was made, after the watches were set up; began is called then, so
// that profiles cover what is timed, not the lists the watches start with
// (8,000 Personas listed as JSON take the API server seconds).
func fanOut(ctx context.Context, c client.WithWatch, procs processes, w *world, what string, edit func(context.Context) error, want map[string]string, timeout time.Duration, began func()) (start time.Time, configMaps, statuses time.Duration, err error) {
	// The hashes before the edit, from the metadata: listing 2,000
	// rendered prompts would leave the API server tens of MB of garbage
	// to collect in the phase.
	cms, err := liveConfigMapMetadata(ctx, c, w.ns)
	if err != nil {
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
	// Each ConfigMap watch selects its half of the operator's ConfigMaps, as
	// the manager's caches do: of the 3 N events of a fan-out (N updates, N
	// snapshots created, N pruned) each receives only those it reads.
	cmTracker, err := track(ctx, c, w.ns, what+": updated ConfigMaps", configMapMetadataList, kube.NotSnapshotSelector, len(before), delivered)
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
		nil, len(before), current)
	if err != nil {
		return start, 0, 0, err
	}
	defer statusTracker.stop()
	// The revision's snapshot of each Persona, and the deletion of the one
	// before it, which the measured Personas do not keep.
	isSnapshot := func(obj client.Object) bool {
		persona, _, ok := delivery.SnapshotOf(obj.GetName())
		_, measured := before[delivery.ConfigMapName(persona)]
		return ok && measured
	}
	snapshotted := func(obj client.Object) bool {
		persona, _, _ := delivery.SnapshotOf(obj.GetName())
		return obj.GetAnnotations()[delivery.ContentHashAnnotation] == want[delivery.ConfigMapName(persona)]
	}
	snapshotTracker, err := trackEvery(ctx, c, w.ns, what+": snapshots, the previous ones pruned", configMapMetadataList, kube.SnapshotSelector, len(before), isSnapshot, snapshotted)
	if err != nil {
		return start, 0, 0, err
	}
	defer snapshotTracker.stop()
	began()
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
	snapshottedAt, err := snapshotTracker.wait(ctx, start, timeout)
	if err != nil {
		return start, deliveredAt.Sub(start), 0, err
	}
	step("  ConfigMaps: %s (CPU until the last: %s); statuses: %s; snapshots: %s", cmTracker.curve(start), cpuDelivering, statusTracker.curve(start), snapshotTracker.curve(start))
	// The watches are separate streams: statuses and snapshots seen before
	// the last ConfigMap count from when all were done.
	return start, deliveredAt.Sub(start), max(currentAt.Sub(start), snapshottedAt.Sub(start), deliveredAt.Sub(start)), nil
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

// liveConfigMapMetadata lists the metadata of ns's live ConfigMaps of the
// operator, its snapshots left out.
func liveConfigMapMetadata(ctx context.Context, c client.Client, ns string) (*metav1.PartialObjectMetadataList, error) {
	cms := configMapMetadataList().(*metav1.PartialObjectMetadataList)
	if err := c.List(ctx, cms, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: kube.NotSnapshotSelector}); err != nil {
		return nil, err
	}
	return cms, nil
}

// unexpectedHashes says how many measured ConfigMaps changed to a hash
// other than the offline render's, for a fan-out that timed out.
func unexpectedHashes(ctx context.Context, c client.Client, ns string, before, want map[string]string) string {
	cms, err := liveConfigMapMetadata(ctx, c, ns)
	if err != nil {
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
