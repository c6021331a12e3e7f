package controllers

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/ssa"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

// The restarts' specs run the manager with --restart-workloads, the RBAC of
// config/components/restart-workloads and its policy (for the test's
// manager identity), and play the Deployment controller themselves:
// envtest runs no kube-controller-manager.
var _ = Describe("Restarts on change", Ordered, Serial, func() {
	const limit = 5
	var rollouts *fakeDeployments

	BeforeAll(func() {
		installRestartComponent()
		saved := manager.Extra
		Expect(manager.Stop()).To(Succeed())
		manager.Extra = append(append([]string{}, saved...), "--restart-workloads",
			fmt.Sprintf("--max-concurrent-restarts=%d", limit), "--restart-deadline=10s")
		Expect(manager.Start(ctx)).To(Succeed())
		DeferCleanup(func() {
			Expect(manager.Stop()).To(Succeed())
			manager.Extra = saved
			Expect(manager.Start(ctx)).To(Succeed())
		})
		rollouts = startFakeDeployments()
		DeferCleanup(rollouts.stop)
	})

	It("restarts onto each new revision, and not when the content did not change", func() {
		ns := newNamespace()
		apply(ns, layerManifest("shared", "app", "append", "Shared one"))
		apply(ns, barePersona("agent", "Agent", "layers: [{name: shared}]"))
		Eventually(func() int64 { return getPersona(ns, "agent").Status.CurrentRevision }).Should(Equal(int64(1)))
		createWorkload(ns, "agent-a", "agent")
		Eventually(templateRevision(ns, "agent-a")).Should(Equal("1"))
		Expect(appliedRevisionOf(ns, "agent-a")).To(Equal("1"))

		apply(ns, layerManifest("shared", "app", "append", "Shared two"))
		Eventually(templateRevision(ns, "agent-a")).Should(Equal("2"))
		Expect(appliedRevisionOf(ns, "agent-a")).To(Equal("2"))

		By("a change that renders the same content makes no revision and no restart")
		generation := deployment(ns, "agent-a").Generation
		p := getPersona(ns, "agent")
		p.Labels = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, p)).To(Succeed())
		Consistently(func() int64 { return deployment(ns, "agent-a").Generation }, 3*time.Second).Should(Equal(generation))
		Expect(getPersona(ns, "agent").Status.CurrentRevision).To(Equal(int64(2)))
	})

	It("follows the stable revision through a canary, and restarts on its promotion only", func() {
		ns := newNamespace()
		apply(ns, barePersona("agent", "One", twoSteps))
		Eventually(currentRevision(ns, "agent")).Should(Equal(int64(1)))
		createWorkload(ns, "agent-a", "agent")
		Eventually(templateRevision(ns, "agent-a")).Should(Equal("1"))

		By("a canary of revision 2 restarts nothing: the workload stays on stable revision 1")
		apply(ns, barePersona("agent", "Two", twoSteps))
		Eventually(canary(ns, "agent")).Should(Equal("2 50% step 1 Paused"))
		generation := deployment(ns, "agent-a").Generation
		Consistently(templateRevision(ns, "agent-a"), 3*time.Second).Should(Equal("1"))
		Expect(deployment(ns, "agent-a").Generation).To(Equal(generation))

		By("its promotion restarts the workload onto revision 2")
		annotate(ns, "agent", v1alpha1.PromoteAnnotation, "2:1")
		Eventually(templateRevision(ns, "agent-a")).Should(Equal("2"))
		Expect(appliedRevisionOf(ns, "agent-a")).To(Equal("2"))

		By("an aborted canary restarts nothing")
		apply(ns, barePersona("agent", "Three", twoSteps))
		Eventually(canary(ns, "agent")).Should(Equal("3 50% step 1 Paused"))
		annotate(ns, "agent", v1alpha1.AbortAnnotation, "3")
		Eventually(canary(ns, "agent")).Should(Equal("3 0% step 1 Aborted"))
		Consistently(templateRevision(ns, "agent-a"), 3*time.Second).Should(Equal("2"))
	})

	It("tells a restart label on another kind once, and not on an object a controller made", func() {
		ns := newNamespace()
		restart := map[string]string{v1alpha1.RestartOnChangeLabel: "true"}
		pod := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly", Labels: restart},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: pod}}}
		Expect(k8s.Create(ctx, job)).To(Succeed())
		bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare", Labels: restart}, Spec: pod}
		Expect(k8s.Create(ctx, bare)).To(Succeed())
		// A Deployment's ReplicaSet has its template's labels: the Deployment is what opts in.
		owned := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "made-by-a-deployment", Labels: map[string]string{v1alpha1.RestartOnChangeLabel: "true", "app": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "agent", UID: "uid-of-a-deployment", Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
					Spec: corev1.PodSpec{Containers: pod.Containers}}}}
		Expect(k8s.Create(ctx, owned)).To(Succeed())

		Eventually(func() string { return eventNote("nightly", "RestartLabelIgnored") }).Should(
			ContainSubstring("Job nightly is not restarted on change: the label " + v1alpha1.RestartOnChangeLabel + " works on Deployments, StatefulSets and DaemonSets only"))
		Eventually(func() string { return eventNote("bare", "RestartLabelIgnored") }).Should(ContainSubstring("Pod bare is not restarted on change"))
		Consistently(func() string { return eventNote("made-by-a-deployment", "RestartLabelIgnored") }, 2*time.Second).Should(BeEmpty())
		Expect(eventCount(ns, "nightly", "RestartLabelIgnored")).To(Equal(int32(1)))
	})

	It("tells a restart that cannot be written once, and goes on with the others", func() {
		ns := newNamespace()
		unwritable := unwritableWorkloads(ns)
		DeferCleanup(func() {
			for _, obj := range unwritable {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed())
			}
		})
		apply(ns, barePersona("agent", "Agent"))
		Eventually(func() int64 { return getPersona(ns, "agent").Status.CurrentRevision }).Should(Equal(int64(1)))
		createLabelledWorkload(ns, "refused", "agent", map[string]string{"unwritable": "yes"})
		createWorkload(ns, "written", "agent")
		Eventually(appliedFunc(ns, "written")).Should(Equal("1"))

		Eventually(func() string { return eventNote("refused", "RestartFailed") }).Should(
			ContainSubstring("the restart onto revision 1 of Persona agent could not be written, and is tried again"))
		apply(ns, barePersona("agent", "Agent edited"))
		Eventually(appliedFunc(ns, "written")).Should(Equal("2"))
		Consistently(func() int32 { return eventCount(ns, "refused", "RestartFailed") }, 3*time.Second).Should(BeNumerically("<=", 2),
			"one Warning per error: revision 1's, then revision 2's")
		Expect(appliedRevisionOf(ns, "refused")).To(BeEmpty())
	})

	It("never has more than the limit rolling out, and restarts all 20", func() {
		ns := newNamespace()
		apply(ns, layerManifest("shared", "app", "append", "One"))
		apply(ns, barePersona("agent", "Agent", "layers: [{name: shared}]"))
		Eventually(func() int64 { return getPersona(ns, "agent").Status.CurrentRevision }).Should(Equal(int64(1)))
		for i := range 20 {
			createWorkload(ns, fmt.Sprintf("w-%02d", i), "agent")
		}
		Eventually(func() int { return countAt(ns, "1") }, 60*time.Second).Should(Equal(20))
		rollouts.hold(ns, time.Second)
		rollouts.resetPeak(ns)
		apply(ns, layerManifest("shared", "app", "append", "Two"))
		Eventually(func() int { return countAt(ns, "2") }, 90*time.Second).Should(Equal(20))
		// Twenty rollouts of a second each fill every wave.
		Expect(rollouts.peak(ns)).To(Equal(limit))
	})

	It("halts a failed rollout's cause in its namespace only, and resumes on the cause's next revision", func() {
		guardrail := nextGuardrailName()
		a, b := labelledNamespace("guardrails", guardrail), labelledNamespace("guardrails", guardrail)
		g := newNamedGuardrail(guardrail, v1alpha1.ClusterLayerLast, "Rule one")
		for _, ns := range []string{a, b} {
			apply(ns, barePersona("agent", "Agent"))
		}
		for _, ns := range []string{a, b} {
			Eventually(func() int64 { return getPersona(ns, "agent").Status.CurrentRevision }).Should(Equal(int64(1)))
			createWorkload(ns, "first", "agent")
		}
		for _, ns := range []string{a, b} {
			Eventually(appliedFunc(ns, "first")).Should(Equal("1"))
			Eventually(func() bool { d := deployment(ns, "first"); return d.Status.ObservedGeneration == d.Generation }).Should(BeTrue())
		}
		rollouts.breakOne(a, "first")
		updateGuardrail(g, func(l *v1alpha1.ClusterPromptLayer) { l.Spec.Template = "Rule two" })
		revA := waitForNewRevision(a, "agent")
		Eventually(appliedFunc(a, "first")).Should(Equal(fmt.Sprint(revA)))

		By("the rollout that does not complete within the deadline halts namespace a")
		Eventually(func() string { return haltedCondition(a, "agent") }, 20*time.Second).Should(Equal("True"))
		Expect(haltedCondition(b, "agent")).NotTo(Equal("True"))
		Expect(meta.IsStatusConditionTrue(getPersona(a, "agent").Status.Conditions, v1alpha1.ReadyCondition)).To(BeTrue(), "the halt does not change Ready")

		By("the Events naming a's workload are in a; the guardrail's, recorded in default, hold counts only")
		Eventually(func() string { return workloadEventNote(a, "first", "RestartsHalted") }).Should(
			ContainSubstring("Deployment " + a + "/first onto revision"))
		Eventually(func() string { return eventNote(g.Name, "RestartsHalted") }).Should(ContainSubstring("waiting restarts"))
		Expect(eventNote(g.Name, "RestartsHalted")).NotTo(Or(ContainSubstring(a), ContainSubstring("first"), ContainSubstring("agent")))
		Expect(eventsNaming(metav1.NamespaceDefault, a)).To(BeEmpty(), "Events in default that name namespace a")
		Eventually(func() string { return workloadEventNote(b, "first", "Restarted") }).Should(ContainSubstring("ClusterPromptLayer " + g.Name))

		By("a's later restarts of the same cause wait; b's do not")
		createWorkload(a, "second", "agent")
		createWorkload(b, "second", "agent")
		revB := getPersona(b, "agent").Status.CurrentRevision
		Eventually(appliedFunc(b, "second")).Should(Equal(fmt.Sprint(revB)))
		Consistently(appliedFunc(a, "second"), 3*time.Second).Should(Equal(""))

		By("the guardrail's next revision resumes a")
		rollouts.repair(a, "first")
		updateGuardrail(g, func(l *v1alpha1.ClusterPromptLayer) { l.Spec.Template = "Rule three" })
		rev3 := waitForNewRevision(a, "agent")
		Eventually(appliedFunc(a, "second"), 20*time.Second).Should(Equal(fmt.Sprint(rev3)))
		Eventually(func() string { return haltedCondition(a, "agent") }, 20*time.Second).Should(Equal("False"))
	})

	It("lifts RolloutHalted when the Persona's next revision has another cause, or the halted workload is deleted", func() {
		guardrail := nextGuardrailName()
		ns := labelledNamespace("guardrails", guardrail)
		g := newNamedGuardrail(guardrail, v1alpha1.ClusterLayerLast, "Rule one")
		halt := func(persona string) {
			Eventually(func() int64 { return getPersona(ns, persona).Status.CurrentRevision }).ShouldNot(BeZero())
			createWorkload(ns, persona+"-workload", persona)
			Eventually(appliedFunc(ns, persona+"-workload")).ShouldNot(BeEmpty())
			Eventually(func() bool {
				d := deployment(ns, persona+"-workload")
				return d.Status.ObservedGeneration == d.Generation
			}).Should(BeTrue())
			rollouts.breakOne(ns, persona+"-workload")
		}
		apply(ns, barePersona("edited", "Edited"))
		apply(ns, barePersona("deleted", "Deleted"))
		halt("edited")
		halt("deleted")
		updateGuardrail(g, func(l *v1alpha1.ClusterPromptLayer) { l.Spec.Template = "Rule two" })
		for _, persona := range []string{"edited", "deleted"} {
			Eventually(func() string { return haltedCondition(ns, persona) }, 20*time.Second).Should(Equal("True"))
		}

		By("the Persona's own edit makes the next revision: no restart of its workloads is halted any more")
		rollouts.repair(ns, "edited-workload")
		apply(ns, barePersona("edited", "Edited again"))
		Eventually(func() string { return haltedCondition(ns, "edited") }, 20*time.Second).Should(Equal("False"))
		Expect(haltedMessage(ns, "edited")).To(ContainSubstring("no restart of this Persona's workloads is halted any more"))

		By("the halted workload is deleted")
		Expect(k8s.Delete(ctx, deployment(ns, "deleted-workload"))).To(Succeed())
		Eventually(func() string { return haltedCondition(ns, "deleted") }, 20*time.Second).Should(Equal("False"))
	})

	It("lets a guardrail's restart overtake a queue of layer-edit restarts", func() {
		guardrail := nextGuardrailName()
		ns := labelledNamespace("guardrails", guardrail)
		// The guardrail selects the urgent Persona alone, from the start: every Persona's first revision is its only one.
		g := &v1alpha1.ClusterPromptLayer{
			ObjectMeta: metav1.ObjectMeta{Name: guardrail},
			Spec: v1alpha1.ClusterPromptLayerSpec{Position: v1alpha1.ClusterLayerLast, Template: "Rule one",
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"guardrails": guardrail}},
				PersonaSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"urgent": "true"}}},
		}
		Expect(k8s.Create(ctx, g)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, g))).To(Succeed()) })
		apply(ns, layerManifest("shared", "app", "append", "One"))
		apply(ns, barePersona("queued", "Queued", "layers: [{name: shared}]"))
		apply(ns, strings.Replace(barePersona("urgent", "Urgent"), "  name: urgent\n", "  name: urgent\n  labels: {urgent: \"true\"}\n", 1))
		for _, name := range []string{"queued", "urgent"} {
			Eventually(func() int64 { return getPersona(ns, name).Status.CurrentRevision }).Should(Equal(int64(1)))
		}
		Expect(prompt(ns, "urgent")()).To(ContainSubstring("Rule one"))
		Expect(prompt(ns, "queued")()).NotTo(ContainSubstring("Rule one"))
		queued := make([]string, 10)
		for i := range queued {
			queued[i] = fmt.Sprintf("q-%02d", i)
			createWorkload(ns, queued[i], "queued")
		}
		createWorkload(ns, "urgent", "urgent")
		Eventually(func() int { return countAt(ns, "1") }, 60*time.Second).Should(Equal(11))
		Eventually(rolledOut(ns), 20*time.Second).Should(BeTrue())
		queuedAt := func(n string) func() int {
			return func() int {
				count := 0
				for _, name := range queued {
					if templateRevision(ns, name)() == n {
						count++
					}
				}
				return count
			}
		}

		By("a layer edit fills the wave with five of the ten queued workloads")
		rollouts.hold(ns, time.Hour)
		apply(ns, layerManifest("shared", "app", "append", "Two"))
		Eventually(queuedAt("2"), 20*time.Second).Should(Equal(limit))

		By("the guardrail's restart waits for a slot while the wave is full")
		updateGuardrail(g, func(l *v1alpha1.ClusterPromptLayer) { l.Spec.Template = "Rule two" })
		Eventually(func() int64 { return getPersona(ns, "urgent").Status.CurrentRevision }).Should(Equal(int64(2)))
		Consistently(appliedFunc(ns, "urgent"), time.Second).Should(Equal("1"))
		Expect(queuedAt("2")()).To(Equal(limit))

		By("the first slot freed goes to the guardrail's restart, ahead of the five queued before it")
		var first string
		for _, name := range queued {
			if templateRevision(ns, name)() == "2" {
				first = name
				break
			}
		}
		rollouts.complete(ns, first)
		Eventually(appliedFunc(ns, "urgent"), 20*time.Second).Should(Equal("2"))
		Consistently(queuedAt("2"), 2*time.Second).Should(Equal(limit))

		By("the queue goes on once the wave completes")
		rollouts.hold(ns, 0)
		Eventually(queuedAt("2"), 60*time.Second).Should(Equal(len(queued)))
		Eventually(func() int { return countAt(ns, "2") }, 20*time.Second).Should(Equal(11))
	})

	It("does not fight a Flux-style server-side apply of the workload's manifest without the annotations", func() {
		ns := newNamespace()
		apply(ns, layerManifest("shared", "app", "append", "One"))
		apply(ns, barePersona("agent", "Agent", "layers: [{name: shared}]"))
		Eventually(func() int64 { return getPersona(ns, "agent").Status.CurrentRevision }).Should(Equal(int64(1)))
		flux := fluxManager()
		manifest := func(image string) *unstructured.Unstructured {
			return objects(ns, fluxWorkload("agent", image))[0]
		}
		fluxApply := func(image string) ssa.Action {
			entry, err := flux.Apply(ctx, manifest(image), kustomizeControllerApply())
			Expect(err).NotTo(HaveOccurred())
			return entry.Action
		}
		drift := func() ssa.Action {
			entry, _, _, err := flux.Diff(ctx, manifest("agent:1"), ssa.DefaultDiffOptions())
			Expect(err).NotTo(HaveOccurred())
			return entry.Action
		}
		Expect(fluxApply("agent:1")).To(Equal(ssa.CreatedAction))
		Eventually(appliedFunc(ns, "agent")).Should(Equal("1"))
		Expect(templateRevision(ns, "agent")()).To(Equal("1"))

		By("the same manifest again: no drift, nothing changed, the annotations kept")
		generation := deployment(ns, "agent").Generation
		Expect(drift()).To(Equal(ssa.UnchangedAction))
		Expect(fluxApply("agent:1")).To(Equal(ssa.UnchangedAction))
		Expect(appliedRevisionOf(ns, "agent")).To(Equal("1"))
		Expect(templateRevision(ns, "agent")()).To(Equal("1"))
		Expect(deployment(ns, "agent").Generation).To(Equal(generation))

		By("a new revision: the restart's write is no drift either")
		apply(ns, layerManifest("shared", "app", "append", "Two"))
		Eventually(templateRevision(ns, "agent")).Should(Equal("2"))
		Expect(drift()).To(Equal(ssa.UnchangedAction))
		Expect(fluxApply("agent:1")).To(Equal(ssa.UnchangedAction))
		Expect(templateRevision(ns, "agent")()).To(Equal("2"))

		By("a change in the manifest is applied, and leaves the annotations alone")
		Expect(fluxApply("agent:2")).To(Equal(ssa.ConfiguredAction))
		d := deployment(ns, "agent")
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("agent:2"))
		Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue(delivery.RevisionAnnotation, "2"))
		Expect(d.Annotations).To(HaveKeyWithValue(v1alpha1.AppliedRevisionAnnotation, "2"))
		Consistently(templateRevision(ns, "agent"), 2*time.Second).Should(Equal("2"))
	})

	It("survives a manager restart mid-wave: nothing forgotten, nothing restarted twice, the limit held", func() {
		ns := newNamespace()
		apply(ns, layerManifest("shared", "app", "append", "One"))
		apply(ns, barePersona("agent", "Agent", "layers: [{name: shared}]"))
		Eventually(func() int64 { return getPersona(ns, "agent").Status.CurrentRevision }).Should(Equal(int64(1)))
		for i := range 12 {
			createWorkload(ns, fmt.Sprintf("w-%02d", i), "agent")
		}
		Eventually(func() int { return countAt(ns, "1") }, 60*time.Second).Should(Equal(12))
		generations := map[string]int64{}
		for i := range 12 {
			name := fmt.Sprintf("w-%02d", i)
			generations[name] = deployment(ns, name).Generation
		}
		rollouts.hold(ns, 2*time.Second)
		rollouts.resetPeak(ns)
		apply(ns, layerManifest("shared", "app", "append", "Two"))
		Eventually(func() int { return countAt(ns, "2") }, 20*time.Second).Should(BeNumerically(">=", limit))
		By("killing the manager with a wave rolling")
		Expect(countAt(ns, "2")).To(BeNumerically("<", 12), "the manager is killed mid-wave")
		Expect(manager.Kill()).To(Succeed())
		Expect(manager.Start(ctx)).To(Succeed())
		Eventually(func() int { return countAt(ns, "2") }, 90*time.Second).Should(Equal(12))
		Expect(rollouts.peak(ns)).To(BeNumerically("<=", limit))
		for name, g := range generations {
			Expect(deployment(ns, name).Generation).To(Equal(g+1), "%s: one change of its pod template", name)
		}
	})
})

// installRestartComponent installs config/components/restart-workloads for
// the manager's test identity, so that every write of these specs passes
// its policy.
func installRestartComponent() {
	Expect(plane.InstallComponent(ctx, inRepo("config", "components", "restart-workloads"), controlplane.ManagerUser)).To(Succeed())
}

// unwritableWorkloads installs a policy that refuses every update of a
// Deployment labelled unwritable in ns, and returns its objects.
func unwritableWorkloads(ns string) []client.Object {
	name := "unwritable-" + ns
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"*"}, Resources: []string{"deployments"}},
				}}}},
			Validations: []admissionv1.Validation{{Expression: "!has(oldObject.metadata.labels) || !('unwritable' in oldObject.metadata.labels)",
				Message: "this Deployment may not be written"}},
		}}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}
	for _, obj := range []client.Object{policy, binding} {
		Expect(k8s.Create(ctx, obj)).To(Succeed())
	}
	// The API server applies a new policy within a second or so.
	time.Sleep(2 * time.Second)
	return []client.Object{binding, policy}
}

func labelledNamespace(key, value string) string {
	ns := newNamespace()
	var n corev1.Namespace
	Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, &n)).To(Succeed())
	n.Labels[key] = value
	Expect(k8s.Update(ctx, &n)).To(Succeed())
	return ns
}

// kustomizeControllerApply are the apply options of kustomize-controller: it
// also strips the fields of kubectl's field managers and its own updates
// (prefixes), which would take a field another manager wrote with them.
func kustomizeControllerApply() ssa.ApplyOptions {
	opts := ssa.DefaultApplyOptions()
	opts.Cleanup = ssa.ApplyCleanupOptions{
		Annotations: []string{corev1.LastAppliedConfigAnnotation},
		FieldManagers: []ssa.FieldManager{
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationApply},
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: "before-first-apply", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: "kustomize-controller", OperationType: metav1.ManagedFieldsOperationUpdate},
		},
	}
	return opts
}

// fluxWorkload is the manifest of a Deployment that opts in and names
// persona on its pod template, as a repository holds it: without the
// restarts' annotations.
func fluxWorkload(persona, image string) string {
	return `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + persona + `
  labels:
    prompts.persona-operator.dev/restart-on-change: "true"
spec:
  replicas: 1
  selector:
    matchLabels: {app: ` + persona + `}
  template:
    metadata:
      labels: {app: ` + persona + `, prompts.persona-operator.dev/persona: ` + persona + `}
    spec:
      containers:
      - name: agent
        image: ` + image + `
`
}

// createWorkload creates a Deployment that opts in and names persona on
// its pod template.
func createWorkload(ns, name, persona string) { createLabelledWorkload(ns, name, persona, nil) }

// createLabelledWorkload is createWorkload with more labels on its metadata.
func createLabelledWorkload(ns, name, persona string, more map[string]string) {
	labels := map[string]string{"app": name}
	optedIn := map[string]string{v1alpha1.RestartOnChangeLabel: "true"}
	maps.Copy(optedIn, more)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: optedIn},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, delivery.PersonaLabel: persona}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}},
			},
		},
	}
	Expect(k8s.Create(ctx, d)).To(Succeed())
}

func deployment(ns, name string) *appsv1.Deployment {
	var d appsv1.Deployment
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)).To(Succeed())
	return &d
}

func templateRevision(ns, name string) func() string {
	return func() string { return deployment(ns, name).Spec.Template.Annotations[delivery.RevisionAnnotation] }
}

func appliedRevisionOf(ns, name string) string {
	return deployment(ns, name).Annotations[v1alpha1.AppliedRevisionAnnotation]
}

func appliedFunc(ns, name string) func() string {
	return func() string { return appliedRevisionOf(ns, name) }
}

// countAt is how many of ns's Deployments have been restarted onto revision n.
func countAt(ns, n string) int {
	var list appsv1.DeploymentList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	count := 0
	for _, d := range list.Items {
		if d.Spec.Template.Annotations[delivery.RevisionAnnotation] == n && d.Annotations[v1alpha1.AppliedRevisionAnnotation] == n {
			count++
		}
	}
	return count
}

// rolledOut says whether every Deployment of ns has rolled out what its
// spec asks.
func rolledOut(ns string) func() bool {
	return func() bool {
		var list appsv1.DeploymentList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for _, d := range list.Items {
			if d.Status.ObservedGeneration < d.Generation {
				return false
			}
		}
		return true
	}
}

// waitForNewRevision waits for the Persona's next delivered revision.
func waitForNewRevision(ns, name string) int64 {
	before := getPersona(ns, name).Status.CurrentRevision
	var now int64
	Eventually(func() int64 { now = getPersona(ns, name).Status.CurrentRevision; return now }).ShouldNot(Equal(before))
	return now
}

func haltedMessage(ns, name string) string {
	c := meta.FindStatusCondition(getPersona(ns, name).Status.Conditions, v1alpha1.RolloutHaltedCondition)
	if c == nil {
		return ""
	}
	return c.Message
}

func haltedCondition(ns, name string) string {
	c := meta.FindStatusCondition(getPersona(ns, name).Status.Conditions, v1alpha1.RolloutHaltedCondition)
	if c == nil {
		return ""
	}
	return string(c.Status)
}

// eventNote is the note of the latest Event of reason regarding the
// cluster-scoped object name, "" when there is none.
func eventNote(name, reason string) string {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list)).To(Succeed())
	for _, e := range list.Items {
		if e.Reason == reason {
			GinkgoWriter.Printf("event %s on %s %s/%s: %s\n", reason, e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Message)
			if e.InvolvedObject.Name == name {
				return e.Message
			}
		}
	}
	return ""
}

// workloadEventNote is the note of the latest Event of reason regarding the
// Deployment name in ns, recorded in ns, "" when there is none.
func workloadEventNote(ns, name, reason string) string {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	note := ""
	for _, e := range list.Items {
		if e.Reason == reason && e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == name {
			note = e.Message
		}
	}
	return note
}

// eventsNaming are the notes of the Events in ns that name text, or whose
// objects do.
func eventsNaming(ns, text string) []string {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if strings.Contains(e.Message, text) || e.InvolvedObject.Namespace == text || e.Related != nil && e.Related.Namespace == text {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// fakeDeployments plays the Deployment controller: it completes each
// Deployment's rollout once it has been held for its namespace's hold time,
// except the broken ones, and records the most rolling out at once per
// namespace.
type fakeDeployments struct {
	mu     sync.Mutex
	holds  map[string]time.Duration
	seen   map[string]time.Time
	broken map[string]bool
	// now are the Deployments to complete at the next tick, hold or not.
	now   map[string]bool
	peaks map[string]int
	done  chan struct{}
	wg    sync.WaitGroup
}

func startFakeDeployments() *fakeDeployments {
	f := &fakeDeployments{holds: map[string]time.Duration{}, seen: map[string]time.Time{}, broken: map[string]bool{},
		now: map[string]bool{}, peaks: map[string]int{}, done: make(chan struct{})}
	f.wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer f.wg.Done()
		for {
			select {
			case <-f.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			f.tick()
		}
	}()
	return f
}

func (f *fakeDeployments) tick() {
	var list appsv1.DeploymentList
	if err := k8s.List(ctx, &list, client.MatchingLabels{v1alpha1.RestartOnChangeLabel: "true"}); err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rolling := map[string]int{}
	now := time.Now()
	for i := range list.Items {
		d := &list.Items[i]
		key := d.Namespace + "/" + d.Name
		if d.Status.ObservedGeneration >= d.Generation {
			delete(f.seen, key)
			continue
		}
		if d.Annotations[v1alpha1.AppliedRevisionAnnotation] != "" {
			rolling[d.Namespace]++
		}
		first, ok := f.seen[key]
		if !ok {
			f.seen[key], first = now, now
		}
		if f.broken[key] || (now.Sub(first) < f.holds[d.Namespace] && !f.now[key]) {
			continue
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		if k8s.Status().Update(ctx, d) == nil {
			delete(f.now, key)
		}
	}
	for ns, n := range rolling {
		f.peaks[ns] = max(f.peaks[ns], n)
	}
}

func (f *fakeDeployments) hold(ns string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holds[ns] = d
}

func (f *fakeDeployments) breakOne(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.broken[ns+"/"+name] = true
}

// complete completes name's rollout at the next tick, whatever the hold.
func (f *fakeDeployments) complete(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now[ns+"/"+name] = true
}

func (f *fakeDeployments) repair(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.broken, ns+"/"+name)
}

func (f *fakeDeployments) resetPeak(ns string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peaks[ns] = 0
}

func (f *fakeDeployments) peak(ns string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peaks[ns]
}

func (f *fakeDeployments) stop() {
	close(f.done)
	f.wg.Wait()
}

// eventCount is how many times Events of reason on name in ns were told,
// their series counted.
func eventCount(ns, name, reason string) int32 {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.Reason == reason && e.InvolvedObject.Name == name {
			n += max(e.Count, 1)
			if e.Series != nil {
				n += e.Series.Count - 1
			}
		}
	}
	return n
}
