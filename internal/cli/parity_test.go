package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/cli"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/fixtures"
	"github.com/persona-operator/persona-operator/test/suite"
)

// The ConfigMap the operator writes equals what kubectl-persona renders
// offline from the same manifests.
var _ = Describe("kubectl-persona parity", func() {
	It("renders the samples exactly as the operator writes them", func() {
		ns := suite.NewNamespace()
		files, personas := suite.ApplySamples(ns)
		for _, name := range personas {
			Eventually(suite.Ready(ns, name)).Should(Equal("Rendered"), name)
			var out, errOut bytes.Buffer
			args := append([]string{"render", "-n", ns, "--persona", name, "-o", "configmap"}, flagsFor(files)...)
			Expect(cli.Run(args, nil, &out, &errOut)).To(Equal(0), errOut.String())
			var offline corev1.ConfigMap
			Expect(yaml.UnmarshalStrict(out.Bytes(), &offline)).To(Succeed())
			online := suite.ConfigMap(ns, name)
			Expect(offline.Data).NotTo(HaveKey(render.RevisionKey), "offline there is no revision")
			Expect(online.Data).To(HaveKey(render.RevisionKey), name)
			Expect(online.Annotations).To(HaveKey(delivery.RevisionAnnotation), name)
			Expect(without(online.Data, render.RevisionKey)).To(Equal(offline.Data), name)
			Expect(online.Labels).To(Equal(offline.Labels), name)
			Expect(without(online.Annotations, delivery.RevisionAnnotation)).To(Equal(offline.Annotations), name)
			Expect(online.Name).To(Equal(offline.Name))
		}
	})
})

// The samples on the neutral PromptPlatform of config/samples, which the
// platform's sections reach.
var _ = Describe("kubectl-persona parity on the sample PromptPlatform", Serial, func() {
	It("renders the samples on the sample PromptPlatform offline exactly as the operator writes them", func() {
		const sample = "../../config/samples/cluster_prompts_v1alpha1_promptplatform.yaml"
		raw, err := os.ReadFile(sample)
		Expect(err).NotTo(HaveOccurred())
		for _, u := range suite.Objects("", string(raw)) {
			Expect(suite.CreateOrUpdate(u)).To(Succeed())
		}
		DeferCleanup(func() {
			pp := &v1alpha1.PromptPlatform{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PromptPlatformName}}
			Expect(client.IgnoreNotFound(suite.K8s.Delete(suite.Ctx, pp))).To(Succeed())
		})
		ns := suite.NewNamespace()
		files, personas := suite.ApplySamples(ns)
		files = append(files, sample)
		onPlatform := 0
		for _, name := range personas {
			var out, errOut bytes.Buffer
			args := append([]string{"render", "-n", ns, "--persona", name, "-o", "configmap"}, flagsFor(files)...)
			Expect(cli.Run(args, nil, &out, &errOut)).To(Equal(0), errOut.String())
			var offline corev1.ConfigMap
			Expect(yaml.UnmarshalStrict(out.Bytes(), &offline)).To(Succeed())
			if strings.Contains(offline.Data["bundle.json"], `"origin":"platform/default"`) {
				onPlatform++
			}
			Eventually(func() map[string]string {
				if cm := suite.ConfigMap(ns, name); cm != nil {
					return without(cm.Data, render.RevisionKey)
				}
				return nil
			}).Should(Equal(offline.Data), name)
			Eventually(suite.Ready(ns, name)).Should(Equal("Rendered"), name)
			Expect(without(suite.ConfigMap(ns, name).Annotations, delivery.RevisionAnnotation)).To(Equal(offline.Annotations), name)
		}
		// The platform's workspace stands wherever no sample replaces it.
		Expect(onPlatform).To(BeNumerically(">", 0))
	})
})

// harnessPrompt: replace where the PromptPlatform forbids it: offline, one
// problem at each field that asks for it; in the operator's condition, the
// same problems joined, each after its field.
var _ = Describe("kubectl-persona parity on a forbidden harnessPrompt", Serial, func() {
	It("reports each field that asks for replace as the operator's status does", func() {
		platform := "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptPlatform\nmetadata: {name: default}\n" +
			"spec: {harnessPrompt: {allowReplace: false}}\n"
		for _, u := range suite.Objects("", platform) {
			Expect(suite.CreateOrUpdate(u)).To(Succeed())
		}
		DeferCleanup(func() {
			pp := &v1alpha1.PromptPlatform{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PromptPlatformName}}
			Expect(client.IgnoreNotFound(suite.K8s.Delete(suite.Ctx, pp))).To(Succeed())
		})
		ns := suite.NewNamespace()
		personas := fixtures.BarePersona("replacing", "R", "harnessPrompt: replace") + "---" +
			fixtures.BarePersona("child", "C", "inherit: [replacing]", "variants: [{name: a}, {name: b, harnessPrompt: replace}]")
		suite.Apply(ns, personas)
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "m.yaml"), []byte(platform+"---"+personas), 0o600)).To(Succeed())

		var out, errOut bytes.Buffer
		Expect(cli.Run([]string{"validate", "-n", ns, "-o", "json", "-f", dir}, nil, &out, &errOut)).To(Equal(1), errOut.String())
		var offline cli.ValidateResult
		Expect(json.Unmarshal(out.Bytes(), &offline)).To(Succeed())
		for name, fields := range map[string][]string{"replacing": {"spec.harnessPrompt"}, "child": {"spec.harnessPrompt", "spec.variants[1].harnessPrompt"}} {
			var got, problems []string
			for _, p := range offline.Problems {
				if p.Name == name {
					got = append(got, p.Field)
					Expect(p.Reason).To(Equal(v1alpha1.HarnessPromptForbiddenReason))
					problems = append(problems, p.Field+": "+p.Message)
				}
			}
			Expect(got).To(Equal(fields), name)
			Eventually(readyCondition(ns, "Persona", name)).Should(Equal(v1alpha1.HarnessPromptForbiddenReason+": "+strings.Join(problems, "; ")), name)
			Expect(stalled(ns, "Persona", name)()).To(BeTrue(), name)
		}
	})
})

// The failures of personas.md#conditions and promptlayers.md#conditions,
// one object each, with the reason the spec gives them.
var _ = Describe("kubectl-persona parity on failures", func() {
	It("reports each failure with the reason and message of the operator's status", func() {
		ns := suite.NewNamespace()
		var chain []string
		// deep0 inherits deep1, ... deep64: 65 Personas in deep0's chain.
		for i := range 65 {
			inherit := "inherit: []"
			if i < 64 {
				inherit = fmt.Sprintf("inherit: [deep%d]", i+1)
			}
			chain = append(chain, fixtures.BarePersona(fmt.Sprintf("deep%d", i), fmt.Sprintf("D%d", i), inherit))
		}
		files := map[string]string{
			"cycle.yaml":  fixtures.BarePersona("cycle-a", "A", "inherit: [cycle-b]") + "---" + fixtures.BarePersona("cycle-b", "B", "inherit: [cycle-a]"),
			"deep.yaml":   strings.Join(chain, "---"),
			"fail.yaml":   fixtures.BarePersona("failing", `{{ fail "broken on purpose" }}`),
			"limit.yaml":  fixtures.BarePersona("hostile", `{{ range 2000000000 }}x{{ end }}`),
			"large.yaml":  fixtures.BarePersona("huge", `{{ repeat 40000 "0123456789" }}`, "variants: [{name: a, model: m1}, {name: b, model: m2}]"),
			"source.yaml": fixtures.UnlabelledAgentsLayer("Be brief.") + "---" + fixtures.BarePersona("unlabelled", "U", "layers: [{name: agents-md}]"),
			"invalid.yaml": `
apiVersion: v1
kind: ConfigMap
metadata:
  name: bad-source
  labels: {prompts.persona-operator.dev/template-source: "true"}
data: {T.md: "{{ .Nope }}"}
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata: {name: bad-md}
spec:
  source: app
  templateFrom: {configMapKeyRef: {name: bad-source, key: T.md}}
`,
			// Last, so that it is still awaited when first compared.
			"missing.yaml": fixtures.BarePersona("missing-layer", "M", "layers: [{name: absent}]"),
		}
		expected := []struct{ kind, name, reason string }{
			{"Persona", "cycle-a", v1alpha1.InheritanceCycleReason},
			{"Persona", "cycle-b", v1alpha1.InheritanceCycleReason},
			{"Persona", "deep0", v1alpha1.InheritanceTooDeepReason},
			{"Persona", "failing", v1alpha1.RenderFailedReason},
			{"Persona", "hostile", v1alpha1.RenderFailedReason},
			{"Persona", "huge", v1alpha1.TooLargeReason},
			{"Persona", "unlabelled", v1alpha1.ReferenceNotFoundReason},
			{"PromptLayer", "agents-md", v1alpha1.ReferenceNotFoundReason},
			{"PromptLayer", "bad-md", v1alpha1.TemplateInvalidReason},
			{"Persona", "missing-layer", v1alpha1.ReferenceNotFoundReason},
		}
		dir := GinkgoT().TempDir()
		for _, name := range slices.Sorted(maps.Keys(files)) {
			Expect(os.WriteFile(filepath.Join(dir, name), []byte(files[name]), 0o600)).To(Succeed())
		}
		for _, name := range []string{"cycle.yaml", "deep.yaml", "fail.yaml", "limit.yaml", "large.yaml", "source.yaml", "invalid.yaml", "missing.yaml"} {
			suite.Apply(ns, files[name])
		}

		var out, errOut bytes.Buffer
		Expect(cli.Run([]string{"validate", "-n", ns, "-o", "json", "-f", dir}, nil, &out, &errOut)).To(Equal(1), errOut.String())
		var offline cli.ValidateResult
		Expect(json.Unmarshal(out.Bytes(), &offline)).To(Succeed())
		compare := func(kind, name, reason string) {
			GinkgoHelper()
			var reasons, messages []string
			for _, p := range offline.Problems {
				if p.Kind == kind && p.Name == name {
					reasons, messages = append(reasons, p.Reason), append(messages, p.Message)
				}
			}
			Expect(reasons).To(HaveExactElements(reason), "%s/%s offline: %v", kind, name, messages)
			message := messages[0]
			if kind == "PromptLayer" && reason == v1alpha1.TemplateInvalidReason {
				// Offline, the message says where the text came from.
				prefix := `the template in key "T.md" of ConfigMap "bad-source": `
				Expect(message).To(HavePrefix(prefix))
				message = strings.TrimPrefix(message, prefix)
			}
			Eventually(readyCondition(ns, kind, name)).Should(Equal(reason+": "+message), "%s/%s", kind, name)
		}
		for _, e := range expected {
			compare(e.kind, e.name, e.reason)
		}
		Expect(offline.Problems).To(HaveLen(len(expected)), "one problem per failing object: %+v", offline.Problems)

		By("reading the same once the missing references are stalled")
		for _, e := range expected {
			if e.reason == v1alpha1.ReferenceNotFoundReason {
				Eventually(stalled(ns, e.kind, e.name)).Should(BeTrue(), "%s/%s", e.kind, e.name)
				compare(e.kind, e.name, e.reason)
			}
		}
	})
})

// readyCondition is the Ready condition of a Persona or PromptLayer at its
// generation, as "reason: message"; "" while there is none.
func readyCondition(ns, kind, name string) func() string {
	return func() string {
		c, generation := conditionOf(ns, kind, name, v1alpha1.ReadyCondition)
		if c == nil || c.ObservedGeneration != generation {
			return ""
		}
		return c.Reason + ": " + c.Message
	}
}

// stalled reports whether a Persona or PromptLayer is Stalled.
func stalled(ns, kind, name string) func() bool {
	return func() bool {
		c, _ := conditionOf(ns, kind, name, v1alpha1.StalledCondition)
		return c != nil && c.Status == metav1.ConditionTrue
	}
}

func conditionOf(ns, kind, name, t string) (*metav1.Condition, int64) {
	key := client.ObjectKey{Namespace: ns, Name: name}
	switch kind {
	case "Persona":
		var p v1alpha1.Persona
		Expect(suite.K8s.Get(suite.Ctx, key, &p)).To(Succeed())
		return meta.FindStatusCondition(p.Status.Conditions, t), p.Generation
	case "PromptLayer":
		var l v1alpha1.PromptLayer
		Expect(suite.K8s.Get(suite.Ctx, key, &l)).To(Succeed())
		return meta.FindStatusCondition(l.Status.Conditions, t), l.Generation
	}
	Fail("no conditions for kind " + kind)
	return nil, 0
}

func flagsFor(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, "-f", f)
	}
	return out
}

// without is m without key: the operator's revision (revision.json and its
// annotation), which an offline render has not.
func without(m map[string]string, key string) map[string]string {
	out := maps.Clone(m)
	delete(out, key)
	return out
}
