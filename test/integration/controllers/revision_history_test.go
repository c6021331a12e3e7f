package controllers

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// revisionJSON is what a spec reads of revision.json.
type revisionJSON struct {
	Persona, Namespace string
	Revision           int64
	ContentHash        string
	RenderedAt         time.Time
	Cause              v1alpha1.RevisionInput
	Inputs             []v1alpha1.RevisionInput
	OperatorVersion    string
}

func revisionOf(cm *corev1.ConfigMap) revisionJSON {
	var rec revisionJSON
	Expect(json.Unmarshal([]byte(cm.Data["revision.json"]), &rec)).To(Succeed(), "revision.json of %s: %q", cm.Name, cm.Data["revision.json"])
	return rec
}

// currentRevision is the Persona's status.currentRevision once its status
// describes its generation, 0 before.
func currentRevision(ns, name string) func() int64 {
	return func() int64 {
		p := getPersona(ns, name)
		if p.Status.ObservedGeneration != p.Generation {
			return 0
		}
		return p.Status.CurrentRevision
	}
}

// snapshotNames are the names of the snapshots persona-<name>.r<n> in ns, sorted.
func snapshotNames(ns, name string) func() []string {
	return func() []string {
		var list corev1.ConfigMapList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"prompts.persona-operator.dev/persona": name})).To(Succeed())
		var names []string
		for _, cm := range list.Items {
			if strings.Contains(cm.Name, ".r") {
				names = append(names, cm.Name)
			}
		}
		slices.Sort(names)
		return names
	}
}

// snapshotData is the data of the snapshot persona-<name>.r<n>, nil while there is none.
func snapshotData(ns, name string, n int64) func() map[string]string {
	return func() map[string]string {
		var cm corev1.ConfigMap
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("persona-%s.r%d", name, n)}, &cm); err != nil {
			return nil
		}
		return cm.Data
	}
}

func snapshotOf(ns, name string, n int64) *corev1.ConfigMap {
	var cm corev1.ConfigMap
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("persona-%s.r%d", name, n)}, &cm)).To(Succeed())
	return &cm
}

// withoutRevision is data without revision.json.
func withoutRevision(data map[string]string) map[string]string {
	out := maps.Clone(data)
	delete(out, "revision.json")
	return out
}

var _ = Describe("Revisions", func() {
	It("numbers each change of content, and snapshots it", func() {
		ns := newNamespace()
		apply(ns, layerManifest("l", "app", "append", "L"))
		apply(ns, barePersona("p", "One", "layers: [{name: l}]"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		cm := configMap(ns, "p")
		Expect(cm.Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "1"))
		rec := revisionOf(cm)
		p := getPersona(ns, "p")
		Expect(rec.Persona).To(Equal("p"))
		Expect(rec.Namespace).To(Equal(ns))
		Expect(rec.Revision).To(Equal(int64(1)))
		Expect(rec.ContentHash).To(Equal(p.Status.ContentHash))
		// The content hash leaves revision.json out.
		Expect(cm.Annotations["prompts.persona-operator.dev/content-hash"]).To(Equal(p.Status.ContentHash))
		Expect(rec.Cause).To(Equal(v1alpha1.RevisionInput{Kind: "Persona", Namespace: ns, Name: "p", Generation: 1}))
		Expect(rec.Inputs).To(ContainElements(
			v1alpha1.RevisionInput{Kind: "Persona", Namespace: ns, Name: "p", Generation: 1},
			v1alpha1.RevisionInput{Kind: "PromptLayer", Namespace: ns, Name: "l", Generation: 1},
		))
		Expect(rec.OperatorVersion).To(Equal("dev"))

		By("keeping an immutable snapshot of revision 1, owned by the Persona")
		Eventually(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r1"}))
		r1 := snapshotOf(ns, "p", 1)
		Expect(r1.Immutable).To(HaveValue(BeTrue()))
		Expect(r1.Data).To(Equal(cm.Data))
		Expect(r1.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "persona-operator"))
		Expect(r1.Labels).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "1"))
		Expect(r1.Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/content-hash", p.Status.ContentHash))
		Expect(r1.OwnerReferences).To(HaveLen(1))
		Expect(r1.OwnerReferences[0].UID).To(Equal(p.UID))

		By("making no revision when the content does not change")
		cmVersion := cm.ResourceVersion
		reconciles := personaReconciles()
		apply(ns, layerManifest("l", "app", "append", "L")+"  description: edited\n")
		Eventually(personaReconciles).Should(BeNumerically(">", reconciles))
		Consistently(func() string { return resourceVersion(ns, "p") }).Should(Equal(cmVersion))
		Expect(getPersona(ns, "p").Status.CurrentRevision).To(Equal(int64(1)))

		By("numbering an edit 2, caused by the Persona's generation 2")
		apply(ns, barePersona("p", "Two", "layers: [{name: l}]"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(2)))
		Expect(revisionOf(configMap(ns, "p")).Cause).To(Equal(v1alpha1.RevisionInput{Kind: "Persona", Namespace: ns, Name: "p", Generation: 2}))

		By("numbering a revert 3, with its own snapshot of revision 1's content")
		apply(ns, barePersona("p", "One", "layers: [{name: l}]"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(3)))
		Eventually(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r1", "persona-p.r2", "persona-p.r3"}))
		Expect(withoutRevision(snapshotOf(ns, "p", 3).Data)).To(Equal(withoutRevision(r1.Data)))
		st := getPersona(ns, "p").Status
		Expect(st.LatestRevision).To(Equal(int64(3)))
		Expect(st.History).To(HaveLen(3))
		Expect(st.History[0].ContentHash).To(Equal(st.History[2].ContentHash))
		Expect(st.History[1].ContentHash).NotTo(Equal(st.History[2].ContentHash))
		for i, e := range st.History {
			Expect(e.Revision).To(Equal(int64(i + 1)))
		}

		By("pruning to revisionHistoryLimit besides the current one, oldest first")
		apply(ns, barePersona("p", "One", "layers: [{name: l}]", "revisionHistoryLimit: 1"))
		Eventually(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r2", "persona-p.r3"}))
		apply(ns, barePersona("p", "Four", "layers: [{name: l}]", "revisionHistoryLimit: 1"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(4)))
		Eventually(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r3", "persona-p.r4"}))
		Consistently(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r3", "persona-p.r4"}))
		Expect(getPersona(ns, "p").Status.History).To(HaveLen(4), "status.history keeps 10 whatever the limit")
	})

	It("writes a snapshot deleted by hand again from the live ConfigMap", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One"))
		Eventually(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r1"}))
		live := configMap(ns, "p")
		Expect(k8s.Delete(ctx, snapshotOf(ns, "p", 1))).To(Succeed())
		Eventually(snapshotData(ns, "p", 1), 5*time.Second).Should(Equal(live.Data))
		Expect(resourceVersion(ns, "p")).To(Equal(live.ResourceVersion))
	})

	It("gives each Persona of a layer's fan-out exactly one new revision, caused by the layer", func() {
		const n = 20
		ns := newNamespace()
		apply(ns, layerManifest("shared", "app", "append", "Shared"))
		for i := range n {
			apply(ns, barePersona(fmt.Sprintf("p%02d", i), fmt.Sprintf("P %d", i), "layers: [{name: shared}]"))
		}
		for i := range n {
			Eventually(currentRevision(ns, fmt.Sprintf("p%02d", i))).Should(Equal(int64(1)))
		}
		apply(ns, layerManifest("shared", "app", "append", "Shared, edited"))
		for i := range n {
			name := fmt.Sprintf("p%02d", i)
			Eventually(prompt(ns, name)).Should(Equal(fmt.Sprintf("P %d\n\nShared, edited\n", i)))
			Eventually(currentRevision(ns, name)).Should(Equal(int64(2)))
			Expect(revisionOf(configMap(ns, name)).Cause).To(Equal(v1alpha1.RevisionInput{Kind: "PromptLayer", Namespace: ns, Name: "shared", Generation: 2}))
			Eventually(snapshotNames(ns, name)).Should(Equal([]string{"persona-" + name + ".r1", "persona-" + name + ".r2"}))
		}
		for i := range n {
			st := getPersona(ns, fmt.Sprintf("p%02d", i)).Status
			Expect(st.History).To(HaveLen(2))
			Expect(st.History[1].Cause.Kind).To(Equal("PromptLayer"))
		}
	})

	It("converges with revision 1 each when Personas and their layer are created at once, shuffled, the layer last", func() {
		const n = 20
		ns := newNamespace()
		manifests := make([]string, n)
		for i := range n {
			manifests[i] = barePersona(fmt.Sprintf("p%02d", i), fmt.Sprintf("P %d", i), "layers: [{name: late}]")
		}
		rand.Shuffle(n, func(i, j int) { manifests[i], manifests[j] = manifests[j], manifests[i] })
		var wg sync.WaitGroup
		for _, m := range manifests {
			wg.Go(func() {
				defer GinkgoRecover()
				apply(ns, m)
			})
		}
		wg.Wait()
		apply(ns, layerManifest("late", "app", "append", "Late"))
		for i := range n {
			name := fmt.Sprintf("p%02d", i)
			Eventually(prompt(ns, name)).Should(Equal(fmt.Sprintf("P %d\n\nLate\n", i)))
			Eventually(currentRevision(ns, name)).Should(Equal(int64(1)))
			Eventually(snapshotNames(ns, name)).Should(Equal([]string{"persona-" + name + ".r1"}))
		}
		for i := range n {
			Expect(getPersona(ns, fmt.Sprintf("p%02d", i)).Status.History).To(HaveLen(1))
		}
	})

	It("starts a re-created Persona at 1 once the old snapshots are gone, and keeps off an old one's snapshot", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One"))
		// Two edits before a reconcile are one revision: each waits for its own.
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		apply(ns, barePersona("p", "Two"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(2)))
		Eventually(snapshotNames(ns, "p")).Should(HaveLen(2))

		By("deleting the Persona; envtest runs no garbage collector, so the live ConfigMap is deleted by hand, the snapshots kept")
		Expect(k8s.Delete(ctx, getPersona(ns, "p"))).To(Succeed())
		Expect(k8s.Delete(ctx, configMap(ns, "p"))).To(Succeed())
		apply(ns, barePersona("p", "Three"))
		Eventually(prompt(ns, "p")).Should(Equal("Three\n"))
		Expect(configMap(ns, "p").Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "1"))
		Eventually(snapshotFailed(ns, "p")).Should(Equal("SnapshotNameTaken"))
		Expect(ready(ns, "p")()).To(Equal("Rendered"))

		By("writing its snapshot once the old Persona's are gone")
		for _, n := range []int64{1, 2} {
			Expect(k8s.Delete(ctx, snapshotOf(ns, "p", n))).To(Succeed())
		}
		Eventually(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r1"}))
		Expect(snapshotOf(ns, "p", 1).OwnerReferences[0].UID).To(Equal(getPersona(ns, "p").UID))
		Eventually(snapshotFailed(ns, "p")).Should(BeEmpty())
		Expect(getPersona(ns, "p").Status.CurrentRevision).To(Equal(int64(1)))
	})
})

// snapshotFailed is the reason of the Persona's SnapshotFailed condition, "" without one.
func snapshotFailed(ns, name string) func() string {
	return func() string {
		c := meta.FindStatusCondition(getPersona(ns, name).Status.Conditions, "SnapshotFailed")
		if c == nil {
			return ""
		}
		return c.Reason
	}
}

var _ = Describe("Revisions across a restart", Serial, func() {
	It("continues the numbers after a restart; a byte cap evicts the oldest snapshots no Persona keeps, else gives SnapshotFailed while the ConfigMap is delivered", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One"))
		// Two edits before a reconcile are one revision: each waits for its own.
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		apply(ns, barePersona("p", "Two"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(2)))
		Eventually(snapshotNames(ns, "p")).Should(HaveLen(2))

		By("restarting the manager with a cap of 6000 bytes of snapshots per namespace")
		extra := manager.Extra
		DeferCleanup(func() {
			Expect(manager.Kill()).To(Succeed())
			manager.Extra = extra
			Expect(manager.Start(ctx)).To(Succeed())
		})
		Expect(manager.Kill()).To(Succeed())
		manager.Extra = append(slices.Clone(extra), "--snapshot-bytes-per-namespace=6000")
		Expect(manager.Start(ctx)).To(Succeed())

		By("numbering the next edit 3")
		apply(ns, barePersona("p", "Three"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(3)))
		Expect(configMap(ns, "p").Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "3"))

		By("delivering a Persona whose snapshot would pass the cap, with SnapshotFailed")
		big := newNamespace()
		apply(big, barePersona("big", strings.Repeat("x", 6500)))
		Eventually(prompt(big, "big")).Should(Equal(strings.Repeat("x", 6500) + "\n"))
		Eventually(snapshotFailed(big, "big")).Should(Equal("SnapshotBytesExceeded"))
		Expect(snapshotNames(big, "big")()).To(BeEmpty())
		Expect(ready(big, "big")()).To(Equal("Rendered"))
		Expect(configMap(big, "big").Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "1"))
		Expect(getPersona(big, "big").Status.CurrentRevision).To(Equal(int64(1)))

		By("counting a snapshot by its data, whatever its size annotation says")
		lied := newNamespace()
		sized := func(i int) string { return fmt.Sprintf("Persona %d %s", i, strings.Repeat("z", 1400)) }
		apply(lied, barePersona("x", sized(1)))
		Eventually(snapshotNames(lied, "x")).Should(Equal([]string{"persona-x.r1"}))
		xSnapshot := snapshotOf(lied, "x", 1)
		one := snapshotBytes(xSnapshot)
		Expect(one).To(And(BeNumerically("<", 6000), BeNumerically(">", 3000)), "one such snapshot fits the cap, two do not")
		xSnapshot.Annotations["prompts.persona-operator.dev/snapshot-bytes"] = "-9000000000000"
		Expect(k8s.Update(ctx, xSnapshot)).To(Succeed())
		apply(lied, barePersona("second", sized(2)))
		Eventually(snapshotFailed(lied, "second")).Should(Equal("SnapshotBytesExceeded"))
		Expect(snapshotNames(lied, "second")()).To(BeEmpty())

		By("evicting the oldest snapshots no Persona keeps, the pinned one kept")
		evict := newNamespace()
		text := func(i int) string { return fmt.Sprintf("Revision %d %s", i, strings.Repeat("y", 300)) }
		apply(evict, barePersona("e", text(1), "revisionHistoryLimit: 20"))
		Eventually(snapshotNames(evict, "e")).Should(Equal([]string{"persona-e.r1"}))
		size := snapshotBytes(snapshotOf(evict, "e", 1))
		fits := 6000 / size
		Expect(fits).To(BeNumerically(">=", 2), "the cap holds the pinned snapshot and at least one more")
		Expect(fits).To(BeNumerically("<", 7), "the cap evicts before revision 8")
		Expect(setPin(evict, "e", "1")).To(Succeed())
		Eventually(pinnedRevision(evict, "e")).Should(Equal(int64(1)))
		for i := 2; i <= 8; i++ {
			apply(evict, pinned(barePersona("e", text(i), "revisionHistoryLimit: 20"), 1))
			Eventually(func() int64 { return getPersona(evict, "e").Status.LatestRevision }).Should(Equal(int64(i)))
			Eventually(snapshotNames(evict, "e")).Should(ContainElement(fmt.Sprintf("persona-e.r%d", i)))
		}
		// Every revision's snapshot is of the same size (texts of one
		// length, single-digit numbers): kept are the pinned revision 1 and
		// the newest fits-1, up to revision 8.
		want := []string{"persona-e.r1"}
		for n := 8 - fits + 2; n <= 8; n++ {
			want = append(want, fmt.Sprintf("persona-e.r%d", n))
		}
		Eventually(snapshotNames(evict, "e")).Should(Equal(want))
		total := 0
		for _, name := range want {
			var n int64
			_, err := fmt.Sscanf(name, "persona-e.r%d", &n)
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshotBytes(snapshotOf(evict, "e", n))).To(Equal(size))
			total += size
		}
		Expect(total).To(BeNumerically("<=", 6000))
		Expect(snapshotFailed(evict, "e")()).To(BeEmpty())
		Expect(prompt(evict, "e")()).To(Equal(text(1) + "\n"))
	})
})

// snapshotBytes is the size of a snapshot's data its annotation records.
func snapshotBytes(cm *corev1.ConfigMap) int {
	n, err := strconv.Atoi(cm.Annotations["prompts.persona-operator.dev/snapshot-bytes"])
	Expect(err).NotTo(HaveOccurred())
	Expect(n).To(Equal(dataBytes(cm.Data)), "the annotation is the size of the data, keys and values")
	return n
}

func dataBytes(data map[string]string) int {
	n := 0
	for k, v := range data {
		n += len(k) + len(v)
	}
	return n
}
