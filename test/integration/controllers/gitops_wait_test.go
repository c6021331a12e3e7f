package controllers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// fluxWaitInterval is how often the specs' WaitForSet polls. Flux polls
// every few seconds; polling this often gives a status that reads Current
// too early every chance to be caught.
const fluxWaitInterval = 20 * time.Millisecond

// fluxChildren are the child Personas of a Flux set.
var fluxChildren = []string{"child-1", "child-2", "child-3", "child-4", "child-5", "child-6"}

// A Flux Kustomization with wait: true applies a directory with fluxcd/pkg/ssa's
// ApplyAllStaged and waits with WaitForSet, which polls every object with
// kstatus and stops at the first terminal state. Success must mean that every
// Persona's ConfigMap holds its render.
var _ = Describe("A set applied and waited on as Flux's kustomize-controller does", func() {
	It("reports success only once every Persona's ConfigMap holds its full render (30 shuffled trials)", func() {
		const trials = 30
		// Trials run a few at a time, like the Kustomizations of a cluster.
		const atOnce = 5
		base := uint64(GinkgoRandomSeed())
		flux := fluxManager()

		failures := make([]string, trials)
		waits := make([]time.Duration, trials)
		var wg sync.WaitGroup
		slots := make(chan struct{}, atOnce)
		for i := range trials {
			ns := fmt.Sprintf("flux-%d-%d", GinkgoParallelProcess(), i)
			seed := base + uint64(i)
			wg.Go(func() {
				defer GinkgoRecover()
				slots <- struct{}{}
				defer func() { <-slots }()
				objs := fluxSet(ns, rand.New(rand.NewPCG(seed, 2)))
				start := time.Now()
				err := applyAndWait(flux, objs, 30*time.Second)
				waits[i] = time.Since(start)
				if err != nil {
					failures[i] = fmt.Sprintf("trial %d (seed %d, order %s): wait: %v", i, seed, order(objs), err)
					return
				}
				if problems := undelivered(ns); len(problems) > 0 {
					failures[i] = fmt.Sprintf("trial %d (seed %d, order %s): the wait succeeded while %s", i, seed, order(objs), strings.Join(problems, "; "))
				}
			})
		}
		wg.Wait()

		failed := slices.DeleteFunc(failures, func(s string) bool { return s == "" })
		summary := fmt.Sprintf("%d of %d trials: success only with every ConfigMap rendered (base seed %d); apply and wait took %s",
			trials-len(failed), trials, base, spread(waits))
		GinkgoWriter.Println(summary)
		AddReportEntry("flux: 30 shuffled sets applied and waited on", summary)
		if len(failed) > 0 {
			Fail(summary + "\n" + strings.Join(failed, "\n"))
		}
	})

	It("does not report success for a set with a typo in a layer name: in progress for the grace period, then failed", func() {
		ns := "flux-typo-" + fmt.Sprint(GinkgoParallelProcess())
		objs := fluxSet(ns, rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), 3)))
		child := objs[slices.IndexFunc(objs, func(u *unstructured.Unstructured) bool { return u.GetName() == "child-3" })]
		Expect(unstructured.SetNestedSlice(child.Object, []any{map[string]any{"name": "agnets-md"}}, "spec", "layers")).To(Succeed())

		flux := fluxManager()
		start := time.Now()
		changes, err := flux.ApplyAllStaged(ctx, objs, ssa.DefaultApplyOptions())
		Expect(err).NotTo(HaveOccurred())
		set := changes.ToObjMetadataSet()

		By("timing out while the missing layer is awaited")
		err = flux.WaitForSetWithContext(ctx, set, ssa.WaitOptions{Interval: fluxWaitInterval, Timeout: referenceGracePeriod / 2})
		Expect(err).To(MatchError(And(HavePrefix("timeout waiting for"), ContainSubstring("Persona/"+ns+"/child-3 status: 'InProgress'"))))

		By("failing once the grace period is over, and not before")
		err = flux.WaitForSetWithContext(ctx, set, ssa.WaitOptions{Interval: fluxWaitInterval, Timeout: 2 * referenceGracePeriod})
		took := time.Since(start)
		Expect(err).To(MatchError(And(HavePrefix("failed early due to stalled resources"), ContainSubstring("Persona/"+ns+"/child-3 status: 'Failed'"))))
		Expect(readyMessage(ns, "child-3")).To(ContainSubstring(`PromptLayer "agnets-md" (referenced by persona "child-3") not found`))
		// The grace period runs from the Ready condition's lastTransitionTime,
		// which the API server keeps to the second: it may have begun up to a
		// second before the create.
		Expect(took).To(BeNumerically(">=", referenceGracePeriod-time.Second), "failed %s after the apply", took)
		Expect(err.Error()).NotTo(ContainSubstring("child-1"), "only the Persona with the typo fails")
	})
})

// fluxManager is a ResourceManager as kustomize-controller builds one: an
// unthrottled client, a kstatus poller over it, four applies at once
// (kustomize-controller's --concurrent-ssa default).
func fluxManager() *ssa.ResourceManager {
	c := unthrottledClient()
	poller := polling.NewStatusPoller(c, c.RESTMapper(), polling.Options{})
	m := ssa.NewResourceManager(c, poller, ssa.Owner{Field: "kustomize-controller", Group: "kustomize.toolkit.fluxcd.io"})
	m.SetConcurrency(4)
	return m
}

// applyAndWait applies objs with ApplyAllStaged and waits on what it applied
// with WaitForSet, as a Kustomization with wait: true does.
func applyAndWait(m *ssa.ResourceManager, objs []*unstructured.Unstructured, timeout time.Duration) error {
	changes, err := m.ApplyAllStaged(ctx, objs, ssa.DefaultApplyOptions())
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	return m.WaitForSetWithContext(ctx, changes.ToObjMetadataSet(), ssa.WaitOptions{Interval: fluxWaitInterval, Timeout: timeout})
}

// fluxSet is a directory a Kustomization would apply, shuffled by rng: the
// namespace ns and orderGraph's objects in it with six children (a
// ConfigMap template source, three PromptLayers, the parent, the children).
func fluxSet(ns string, rng *rand.Rand) []*unstructured.Unstructured {
	namespace, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}})
	Expect(err).NotTo(HaveOccurred())
	refs, kids := orderGraph(ns, fluxChildren...)
	return shuffled(rng, append(append(refs, kids...), &unstructured.Unstructured{Object: namespace}))
}

// undelivered lists what is not yet as it must be once the set of ns is
// healthy: every Persona's ConfigMap holds the render derived by hand
// (wantParent, wantChild), its content hash annotation is the hash of its
// data and the one its Persona's status reports.
func undelivered(ns string) []string {
	var problems []string
	var cms corev1.ConfigMapList
	Expect(k8s.List(ctx, &cms, client.InNamespace(ns))).To(Succeed())
	var personas v1alpha1.PersonaList
	Expect(k8s.List(ctx, &personas, client.InNamespace(ns))).To(Succeed())
	want := map[string]string{"parent": wantParent(ns)}
	for _, c := range fluxChildren {
		want[c] = wantChild(ns, c)
	}
	for name, text := range want {
		i := slices.IndexFunc(cms.Items, func(cm corev1.ConfigMap) bool { return cm.Name == delivery.ConfigMapName(name) })
		if i < 0 {
			problems = append(problems, "ConfigMap "+delivery.ConfigMapName(name)+" is missing")
			continue
		}
		cm := cms.Items[i]
		if got := cm.Data["system-prompt.md"]; got != text {
			problems = append(problems, fmt.Sprintf("system-prompt.md of %s is %q, want %q", name, got, text))
		}
		hash := cm.Annotations[delivery.ContentHashAnnotation]
		if hash != render.ContentHash(cm.Data) {
			problems = append(problems, fmt.Sprintf("the content hash of %s, %s, is not its data's", cm.Name, hash))
		}
		j := slices.IndexFunc(personas.Items, func(p v1alpha1.Persona) bool { return p.Name == name })
		if j < 0 || personas.Items[j].Status.ContentHash != hash {
			problems = append(problems, fmt.Sprintf("the status of %s does not report the content hash of its ConfigMap", name))
		}
	}
	slices.Sort(problems)
	return problems
}
