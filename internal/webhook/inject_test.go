package webhook_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/suite"
)

// The pod injection through the API server, with the webhook served by the
// manager. Every expected value is §16's, written out by hand.
var _ = Describe("Injection", func() {
	var ns string
	BeforeEach(func() { ns = suite.NewNamespace() })

	persona := func(name, model string) {
		suite.Apply(ns, fmt.Sprintf(`apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata: {name: %s}
spec:
  model: %s
  variants: [{name: short, model: small}]
`, name, model))
	}
	// atRevision waits until the Persona delivers revision n.
	atRevision := func(name string, n int64) {
		Eventually(func() int64 { return suite.GetPersona(ns, name).Status.CurrentRevision }).Should(Equal(n), "persona %s at revision %d", name, n)
	}
	podOf := func(persona string, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "agent-", Namespace: ns, Annotations: annotations,
				Labels: map[string]string{"prompts.persona-operator.dev/persona": persona}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "agent", Image: "busybox", Env: []corev1.EnvVar{{Name: "PERSONA_PROMPT_FILE", Value: "/elsewhere"}}},
				{Name: "sidecar", Image: "busybox"},
			}},
		}
	}
	create := func(pod *corev1.Pod) *corev1.Pod {
		Expect(suite.K8s.Create(suite.Ctx, pod)).To(Succeed())
		return pod
	}
	// launched creates pod until one gets the launch variables: a loaded API
	// server may answer the first read of a snapshot after the webhook's
	// wait, and the pod is then admitted without them, by design.
	launched := func(pod *corev1.Pod) *corev1.Pod {
		var got *corev1.Pod
		Eventually(func() []corev1.EnvVar {
			got = create(pod.DeepCopy())
			return got.Spec.Containers[0].Env
		}).Should(ContainElement(HaveField("Name", "PERSONA_HARNESS")))
		return got
	}
	promptVolumes := func(pod *corev1.Pod) []string {
		var out []string
		for _, v := range pod.Spec.Volumes {
			if v.ConfigMap != nil {
				out = append(out, v.Name+"="+v.ConfigMap.Name)
			}
		}
		return out
	}
	envOf := func(c corev1.Container) map[string]string {
		out := map[string]string{}
		for _, e := range c.Env {
			out[e.Name] = e.Value
		}
		return out
	}

	It("adds the snapshot volume, the read-only mount, the variables and the revision", func() {
		persona("reviewer", "m1")
		atRevision("reviewer", 1)
		pod := launched(podOf("reviewer", nil))

		Expect(promptVolumes(pod)).To(Equal([]string{"persona-prompt=persona-reviewer.r1"}))
		for _, c := range pod.Spec.Containers {
			Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "persona-prompt", MountPath: "/etc/persona", ReadOnly: true}), c.Name)
			Expect(envOf(c)).To(Equal(map[string]string{
				"PERSONA_NAME":        "reviewer",
				"PERSONA_PROMPT_FILE": "/etc/persona/system-prompt.md", // the pod's own /elsewhere is overwritten
				"PERSONA_BUNDLE_FILE": "/etc/persona/bundle.json",
				"PERSONA_REVISION":    "1",
				// From revision 1's bundle.json: the default harness, the
				// model, no reasoning effort (set empty), harnessPrompt unset.
				"PERSONA_HARNESS":          "claude",
				"PERSONA_MODEL":            "m1",
				"PERSONA_REASONING_EFFORT": "",
				"PERSONA_HARNESS_PROMPT":   "keep",
			}), c.Name)
		}
		Expect(pod.Labels).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "1"))
		Expect(pod.Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "1"))
	})

	It("mounts the live ConfigMap for delivery: live, at the mount path, in the containers listed, with the variant's file", func() {
		persona("reviewer", "m1")
		atRevision("reviewer", 1)
		pod := create(podOf("reviewer", map[string]string{
			"prompts.persona-operator.dev/delivery":   "live",
			"prompts.persona-operator.dev/mount-path": "/run/prompt",
			"prompts.persona-operator.dev/containers": "agent",
			"prompts.persona-operator.dev/variant":    "short",
		}))
		Expect(promptVolumes(pod)).To(Equal([]string{"persona-prompt=persona-reviewer"}))
		agent, sidecar := pod.Spec.Containers[0], pod.Spec.Containers[1]
		Expect(agent.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "persona-prompt", MountPath: "/run/prompt", ReadOnly: true}))
		Expect(envOf(agent)).To(Equal(map[string]string{
			"PERSONA_NAME":        "reviewer",
			"PERSONA_PROMPT_FILE": "/run/prompt/system-prompt.short.md",
			"PERSONA_BUNDLE_FILE": "/run/prompt/bundle.json",
		}))
		Expect(sidecar.VolumeMounts).To(BeEmpty())
		Expect(sidecar.Env).To(BeEmpty())
		Expect(pod.Labels).NotTo(HaveKey("prompts.persona-operator.dev/revision"))
		Expect(pod.Annotations).NotTo(HaveKey("prompts.persona-operator.dev/revision"))
	})

	It("sets the launch variables from the bundle.json of the revision mounted, the variant's fields over the persona's", func() {
		suite.Apply(ns, `apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata: {name: base}
spec: {harness: codex, harnessPrompt: replace}
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata: {name: coder}
spec:
  inherit: [base]
  model: gpt-5.1-codex
  reasoningEffort: high
  variants: [{name: claude, harness: claude, model: claude-sonnet-4-5, harnessPrompt: keep}]
`)
		atRevision("coder", 1)
		launch := func(pod *corev1.Pod) map[string]string {
			env := envOf(pod.Spec.Containers[0])
			out := map[string]string{}
			for _, k := range []string{"PERSONA_REVISION", "PERSONA_HARNESS", "PERSONA_MODEL", "PERSONA_REASONING_EFFORT", "PERSONA_HARNESS_PROMPT"} {
				if v, ok := env[k]; ok {
					out[k] = v
				}
			}
			return out
		}
		Expect(launch(launched(podOf("coder", nil)))).To(Equal(map[string]string{"PERSONA_REVISION": "1",
			"PERSONA_HARNESS": "codex", "PERSONA_MODEL": "gpt-5.1-codex", "PERSONA_REASONING_EFFORT": "high", "PERSONA_HARNESS_PROMPT": "replace"}))
		Expect(launch(launched(podOf("coder", map[string]string{"prompts.persona-operator.dev/variant": "claude"})))).To(Equal(map[string]string{
			"PERSONA_REVISION": "1", "PERSONA_HARNESS": "claude", "PERSONA_MODEL": "claude-sonnet-4-5", "PERSONA_REASONING_EFFORT": "high", "PERSONA_HARNESS_PROMPT": "keep"}))

		By("a revision 2 that changes them, while a pod template names revision 1")
		suite.Apply(ns, `apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata: {name: coder}
spec: {inherit: [base], model: gpt-5.2-codex, harnessPrompt: keep}
`)
		atRevision("coder", 2)
		Expect(launch(launched(podOf("coder", map[string]string{"prompts.persona-operator.dev/revision": "1"})))).To(Equal(map[string]string{
			"PERSONA_REVISION": "1", "PERSONA_HARNESS": "codex", "PERSONA_MODEL": "gpt-5.1-codex", "PERSONA_REASONING_EFFORT": "high", "PERSONA_HARNESS_PROMPT": "replace"}))
		Expect(launch(launched(podOf("coder", nil)))).To(Equal(map[string]string{"PERSONA_REVISION": "2",
			"PERSONA_HARNESS": "codex", "PERSONA_MODEL": "gpt-5.2-codex", "PERSONA_REASONING_EFFORT": "", "PERSONA_HARNESS_PROMPT": "keep"}))

		By("a live mount: its values change under the pod, so none is set")
		Expect(launch(create(podOf("coder", map[string]string{"prompts.persona-operator.dev/delivery": "live"})))).To(BeEmpty())
	})

	It("changes nothing more in a pod it already injected (reinvocation)", func() {
		persona("reviewer", "m1")
		atRevision("reviewer", 1)
		first := launched(podOf("reviewer", nil))
		// The injected pod sent again: what a reinvocation gets.
		again := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "agent-", Namespace: ns,
			Labels: first.Labels, Annotations: first.Annotations}, Spec: *first.Spec.DeepCopy()}
		// A new revision meanwhile: the pod's choice stands.
		persona("reviewer", "m2")
		atRevision("reviewer", 2)
		create(again)
		Expect(again.Spec.Volumes).To(Equal(first.Spec.Volumes))
		for i := range first.Spec.Containers {
			Expect(again.Spec.Containers[i].VolumeMounts).To(Equal(first.Spec.Containers[i].VolumeMounts))
			Expect(again.Spec.Containers[i].Env).To(Equal(first.Spec.Containers[i].Env))
		}
		Expect(again.Labels).To(Equal(first.Labels))
	})

	DescribeTable("refuses, naming the cause",
		func(modify func(*corev1.Pod), field, cause string) {
			persona("reviewer", "m1")
			atRevision("reviewer", 1)
			pod := podOf("reviewer", nil)
			modify(pod)
			err := suite.K8s.Create(suite.Ctx, pod)
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring(field))
			Expect(err.Error()).To(ContainSubstring(cause))
		},
		Entry("another volume at the mount path", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/etc/persona"}}
		}, "spec.containers[1].volumeMounts[0].mountPath", "shadow the prompt"),
		Entry("a subPath mount under the mount path", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "old", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "prompts"}}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "old", MountPath: "/etc/persona/system-prompt.md", SubPath: "system-prompt.md"}}
		}, "spec.containers[0].volumeMounts[0].mountPath", "/etc/persona/system-prompt.md"),
		Entry("an unknown variant", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/variant": "long"}
		}, "metadata.annotations[prompts.persona-operator.dev/variant]", "persona reviewer has no such variant (it has short)"),
		Entry("a revision that does not parse", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/revision": "latest"}
		}, "metadata.annotations[prompts.persona-operator.dev/revision]", "positive integer"),
		Entry("a mount path the platform does not list", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/mount-path": "/lib/persona"}
		}, "metadata.annotations[prompts.persona-operator.dev/mount-path]", `supported values: "/etc/persona", "/run/prompt"`),
		Entry("a delivery that does not parse", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/delivery": "stream"}
		}, "metadata.annotations[prompts.persona-operator.dev/delivery]", `"stream"`),
		Entry("an unknown container", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/containers": "agnet"}
		}, "metadata.annotations[prompts.persona-operator.dev/containers]", "agnet"),
	)

	It("leaves a pod without the label as it is", func() {
		persona("reviewer", "m1")
		atRevision("reviewer", 1)
		pod := podOf("reviewer", map[string]string{"prompts.persona-operator.dev/delivery": "bogus"})
		pod.Labels = map[string]string{"app": "agent"}
		create(pod)
		Expect(pod.Spec.Volumes).To(BeEmpty())
		Expect(envOf(pod.Spec.Containers[0])).To(Equal(map[string]string{"PERSONA_PROMPT_FILE": "/elsewhere"}))
	})

	It("leaves a pod that mounts its Persona's ConfigMap by hand as it is", func() {
		persona("reviewer", "m1")
		atRevision("reviewer", 1)
		pod := podOf("reviewer", nil)
		pod.Spec.Volumes = []corev1.Volume{{Name: "persona", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "persona-reviewer"}}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "persona", MountPath: "/etc/persona", ReadOnly: true}}
		create(pod)
		Expect(promptVolumes(pod)).To(Equal([]string{"persona=persona-reviewer"}))
		Expect(envOf(pod.Spec.Containers[0])).To(Equal(map[string]string{"PERSONA_PROMPT_FILE": "/elsewhere"}))
		Expect(pod.Labels).NotTo(HaveKey("prompts.persona-operator.dev/revision"))
	})

	It("gives a pod created before its Persona the live ConfigMap, and the next one the snapshot", func() {
		early := create(podOf("late", map[string]string{"prompts.persona-operator.dev/variant": "short"}))
		Expect(promptVolumes(early)).To(Equal([]string{"persona-prompt=persona-late"}))
		Expect(envOf(early.Spec.Containers[0])).NotTo(HaveKey("PERSONA_REVISION"))
		Expect(envOf(early.Spec.Containers[0])).NotTo(HaveKey("PERSONA_HARNESS"), "nothing is rendered yet to read it from")
		Expect(envOf(early.Spec.Containers[0])).To(HaveKeyWithValue("PERSONA_PROMPT_FILE", "/etc/persona/system-prompt.short.md"))
		persona("late", "m1")
		atRevision("late", 1)
		Eventually(func() []string { return promptVolumes(create(podOf("late", nil))) }).Should(Equal([]string{"persona-prompt=persona-late.r1"}))
	})

	It("gives a pod its template's revision while its guardrails are current, and the current revision once a guardrail is added", func() {
		persona("reviewer", "m1")
		atRevision("reviewer", 1)
		persona("reviewer", "m2")
		atRevision("reviewer", 2)
		named := func(n string) []string {
			return promptVolumes(create(podOf("reviewer", map[string]string{"prompts.persona-operator.dev/revision": n})))
		}
		Expect(named("1")).To(Equal([]string{"persona-prompt=persona-reviewer.r1"}))
		Expect(named("2")).To(Equal([]string{"persona-prompt=persona-reviewer.r2"}))
		Expect(named("9")).To(Equal([]string{"persona-prompt=persona-reviewer.r2"}), "a revision with no snapshot")

		// A guardrail selecting the namespace: revision 3, whose guardrails
		// revisions 1 and 2 predate.
		var namespace corev1.Namespace
		Expect(suite.K8s.Get(suite.Ctx, client.ObjectKey{Name: ns}, &namespace)).To(Succeed())
		namespace.Labels["inject-guardrail"] = ns
		Expect(suite.K8s.Update(suite.Ctx, &namespace)).To(Succeed())
		guardrail := &v1alpha1.ClusterPromptLayer{ObjectMeta: metav1.ObjectMeta{Name: "inject-" + ns}, Spec: v1alpha1.ClusterPromptLayerSpec{
			Template: "Never push to the default branch.", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"inject-guardrail": ns}}}}
		Expect(suite.K8s.Create(suite.Ctx, guardrail)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.K8s.Delete(suite.Ctx, guardrail))).To(Succeed()) })
		atRevision("reviewer", 3)
		Eventually(func() []string { return named("1") }).Should(Equal([]string{"persona-prompt=persona-reviewer.r3"}))
		Expect(named("2")).To(Equal([]string{"persona-prompt=persona-reviewer.r3"}))
		Expect(named("3")).To(Equal([]string{"persona-prompt=persona-reviewer.r3"}))
	})

	It("counts the injected snapshot pods by revision in status.agents as pods come and go", func() {
		persona("reviewer", "m1")
		atRevision("reviewer", 1)
		agents := func() *v1alpha1.AgentsStatus { return suite.GetPersona(ns, "reviewer").Status.Agents }
		onFirst := []*corev1.Pod{create(podOf("reviewer", nil)), create(podOf("reviewer", nil))}
		create(podOf("reviewer", map[string]string{"prompts.persona-operator.dev/delivery": "live"})) // not counted
		Eventually(agents).Should(Equal(&v1alpha1.AgentsStatus{Current: 2, Revisions: []v1alpha1.RevisionAgents{{Revision: 1, Pods: 2}}}))

		persona("reviewer", "m2")
		atRevision("reviewer", 2)
		create(podOf("reviewer", nil))
		Eventually(agents).Should(Equal(&v1alpha1.AgentsStatus{Current: 1, Revisions: []v1alpha1.RevisionAgents{{Revision: 2, Pods: 1}, {Revision: 1, Pods: 2}}}))

		for _, pod := range onFirst {
			Expect(suite.K8s.Delete(suite.Ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		}
		Eventually(agents).Should(Equal(&v1alpha1.AgentsStatus{Current: 1, Revisions: []v1alpha1.RevisionAgents{{Revision: 2, Pods: 1}}}))
	})

	It("keeps a snapshot a pod names beyond revisionHistoryLimit, and prunes it once the pod is gone", func() {
		suite.Apply(ns, `apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata: {name: reviewer}
spec: {model: m1, revisionHistoryLimit: 0}
`)
		atRevision("reviewer", 1)
		pinned := create(podOf("reviewer", nil))
		Expect(promptVolumes(pinned)).To(Equal([]string{"persona-prompt=persona-reviewer.r1"}))
		snapshots := func() []string {
			var list corev1.ConfigMapList
			Expect(suite.K8s.List(suite.Ctx, &list, client.InNamespace(ns), client.HasLabels{"prompts.persona-operator.dev/revision"})).To(Succeed())
			var out []string
			for _, cm := range list.Items {
				out = append(out, cm.Name)
			}
			return out
		}
		for i, model := range []string{"m2", "m3"} {
			suite.Apply(ns, fmt.Sprintf("apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: reviewer}\nspec: {model: %s, revisionHistoryLimit: 0}\n", model))
			atRevision("reviewer", int64(i+2))
		}
		// Revision 2 is pruned (limit 0); 1 stays while the pod names it.
		Eventually(snapshots).Should(ConsistOf("persona-reviewer.r1", "persona-reviewer.r3"))
		Consistently(snapshots).Should(ConsistOf("persona-reviewer.r1", "persona-reviewer.r3"))

		Expect(suite.K8s.Delete(suite.Ctx, pinned, client.GracePeriodSeconds(0))).To(Succeed())
		suite.Apply(ns, "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: reviewer}\nspec: {model: m4, revisionHistoryLimit: 0}\n")
		atRevision("reviewer", 4)
		Eventually(snapshots).Should(ConsistOf("persona-reviewer.r4"))
	})

	It("with the sample policy, admits in a guarded namespace only pods that get the operator's prompt", func() {
		guard(ns)
		persona("reviewer", "m1")
		atRevision("reviewer", 1)

		unlabelled := func() error {
			pod := podOf("reviewer", nil)
			pod.Labels = nil
			return suite.K8s.Create(suite.Ctx, pod)
		}
		Eventually(unlabelled).Should(MatchError(ContainSubstring("label the pod (its template) prompts.persona-operator.dev/persona: <name>")))
		handMounted := podOf("reviewer", nil)
		handMounted.Spec.Volumes = []corev1.Volume{{Name: "prompt", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "persona-reviewer"}}}}}}}}
		Expect(suite.K8s.Create(suite.Ctx, handMounted)).To(MatchError(ContainSubstring("may not mount a persona-* ConfigMap by hand (volumes prompt)")))
		byEnv := podOf("reviewer", nil)
		byEnv.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "persona-reviewer.r1"}}}}
		Expect(suite.K8s.Create(suite.Ctx, byEnv)).To(MatchError(ContainSubstring("may not read a persona-* ConfigMap into the environment (containers " + byEnv.Spec.Containers[0].Name + ")")))
		Expect(promptVolumes(create(podOf("reviewer", nil)))).To(Equal([]string{"persona-prompt=persona-reviewer.r1"}))
	})

	It("gives each of 200 pods created at once exactly one volume, of the right revision", func() {
		persona("reviewer", "m1")
		atRevision("reviewer", 1)
		persona("reviewer", "m2")
		atRevision("reviewer", 2)
		const n = 200
		// Shuffled: a third name revision 1, a third ask for the live
		// ConfigMap, the rest get the current revision, 2.
		kinds := make([]int, n)
		for i := range kinds {
			kinds[i] = i % 3
		}
		rand.Shuffle(n, func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
		want := map[int]string{0: "persona-prompt=persona-reviewer.r1", 1: "persona-prompt=persona-reviewer", 2: "persona-prompt=persona-reviewer.r2"}
		pods := make([]*corev1.Pod, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, kind := range kinds {
			var annotations map[string]string
			switch kind {
			case 0:
				annotations = map[string]string{"prompts.persona-operator.dev/revision": "1"}
			case 1:
				annotations = map[string]string{"prompts.persona-operator.dev/delivery": "live"}
			}
			pods[i] = podOf("reviewer", annotations)
			wg.Go(func() { errs[i] = suite.K8s.Create(suite.Ctx, pods[i]) })
		}
		wg.Wait()
		for i, pod := range pods {
			Expect(errs[i]).NotTo(HaveOccurred(), "pod %d", i)
			Expect(promptVolumes(pod)).To(Equal([]string{want[kinds[i]]}), "pod %d", i)
			if kinds[i] != 1 {
				revision := want[kinds[i]][len(want[kinds[i]])-1:]
				Expect(pod.Labels).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", revision), "pod %d", i)
				Expect(envOf(pod.Spec.Containers[1])).To(HaveKeyWithValue("PERSONA_REVISION", revision), "pod %d", i)
			}
		}
		var list corev1.PodList
		Expect(suite.K8s.List(suite.Ctx, &list, client.InNamespace(ns), client.MatchingLabels{"prompts.persona-operator.dev/revision": "2"})).To(Succeed())
		Expect(list.Items).To(HaveLen(66)) // i % 3 == 2 for 66 of 0..199
	})
})

// guard installs the sample pod policy for the spec and labels ns, so that
// the policy guards it.
func guard(ns string) {
	raw, err := os.ReadFile("../../config/samples/policy_agent_pods.yaml")
	Expect(err).NotTo(HaveOccurred())
	objects, err := controlplane.DecodeManifest(bytes.NewReader(raw))
	Expect(err).NotTo(HaveOccurred())
	Expect(objects).To(HaveLen(2))
	for _, u := range objects {
		Expect(suite.K8s.Create(suite.Ctx, u)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.K8s.Delete(suite.Ctx, u))).To(Succeed()) })
	}
	var namespace corev1.Namespace
	Expect(suite.K8s.Get(suite.Ctx, client.ObjectKey{Name: ns}, &namespace)).To(Succeed())
	namespace.Labels["prompts.persona-operator.dev/agents"] = "guarded"
	Expect(suite.K8s.Update(suite.Ctx, &namespace)).To(Succeed())
}
