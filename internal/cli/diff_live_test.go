package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/internal/cli"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/fixtures"
	"github.com/persona-operator/persona-operator/test/suite"
)

// kubectl persona diff --live reads the ConfigMaps the operator wrote.
var _ = Describe("kubectl-persona diff --live", func() {
	It("compares manifests with the operator's ConfigMaps", func() {
		ns := suite.NewNamespace()
		files, personas := suite.ApplySamples(ns)
		for _, name := range personas {
			Eventually(suite.Ready(ns, name)).Should(Equal("Rendered"), name)
		}
		kubeconfig := kubeconfigWithContext("envtest", ns)
		diff := func(files ...string) (int, string) {
			var out, errOut bytes.Buffer
			// No -n: manifests without a namespace are in the context's.
			args := append([]string{"diff", "--live", "--kubeconfig", kubeconfig, "--context", "envtest"}, flagsFor(files)...)
			code := cli.Run(args, nil, &out, &errOut)
			// Where each cluster-scoped input came from, and no warning: the
			// administrator reads them all.
			Expect(errOut.String()).To(ContainSubstring("ClusterPromptLayers: from the cluster ("))
			Expect(errOut.String()).To(ContainSubstring("PromptPlatforms: from the cluster ("))
			Expect(errOut.String()).To(ContainSubstring("Namespaces: from the cluster (" + ns + ")\n"))
			Expect(errOut.String()).NotTo(ContainSubstring("Warning"))
			return code, out.String()
		}

		By("finding no difference with the manifests the cluster holds")
		code, out := diff(files...)
		Expect(code).To(Equal(cli.DiffNone))
		Expect(out).To(BeEmpty())

		By("showing an edited persona, and a persona not in the cluster as added")
		dir := GinkgoT().TempDir()
		var edited []string
		for _, f := range files {
			raw, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			if strings.HasSuffix(f, "_bare_prompt.yaml") {
				Expect(strings.Count(string(raw), "then stop.")).To(Equal(1))
				f = filepath.Join(dir, filepath.Base(f))
				Expect(os.WriteFile(f, []byte(strings.Replace(string(raw), "then stop.", "then stop and report.", 1)), 0o644)).To(Succeed())
			}
			edited = append(edited, f)
		}
		newcomer := filepath.Join(dir, "newcomer.yaml")
		Expect(os.WriteFile(newcomer, []byte(fixtures.BarePersona("newcomer", "New.")), 0o644)).To(Succeed())
		code, out = diff(append(edited, newcomer)...)
		Expect(code).To(Equal(cli.DiffFound))
		// bare-prompt's system prompt is its one extension's two lines.
		Expect(out).To(Equal("persona " + ns + "/bare-prompt system-prompt.md\n" +
			"--- live/" + ns + "/bare-prompt/system-prompt.md\n" +
			"+++ new/" + ns + "/bare-prompt/system-prompt.md\n" +
			"@@ -1,2 +1,2 @@\n" +
			" You are a focused code-fixing agent. Make the smallest change that\n" +
			"-resolves the task, then stop.\n" +
			"+resolves the task, then stop and report.\n" +
			"persona " + ns + "/newcomer added\n"))

		By("needing no more than to get ConfigMaps")
		var out2, errOut bytes.Buffer
		args := append([]string{"diff", "--live", "--kubeconfig", configMapReader(ns), "-n", ns}, flagsFor(append(edited, newcomer))...)
		Expect(cli.Run(args, nil, &out2, &errOut)).To(Equal(cli.DiffFound), errOut.String())
		Expect(out2.String()).To(Equal(out))
		// What it may not read is named, and the diff goes on without it.
		Expect(errOut.String()).To(ContainSubstring("Warning: --live: cannot read the cluster's ClusterPromptLayers"))
		Expect(errOut.String()).To(ContainSubstring("Warning: cannot read Namespace " + ns + ","))

		By("listing a persona the change breaks as broken, with status 2 and its problem")
		breaking := filepath.Join(dir, "breaking.yaml")
		Expect(os.WriteFile(breaking, []byte(fixtures.BarePersona("bare-prompt", "Fix.", "inherit: [missing-parent]")), 0o644)).To(Succeed())
		var withBroken []string
		for _, f := range files {
			if !strings.HasSuffix(f, "_bare_prompt.yaml") {
				withBroken = append(withBroken, f)
			}
		}
		var out3, errOut3 bytes.Buffer
		args = append([]string{"diff", "--live", "--kubeconfig", kubeconfig, "--context", "envtest"}, flagsFor(append(withBroken, breaking))...)
		Expect(cli.Run(args, nil, &out3, &errOut3)).To(Equal(cli.DiffError))
		Expect(out3.String()).To(Equal("persona " + ns + "/bare-prompt broken: it does not render on the new side\n"))
		Expect(errOut3.String()).To(ContainSubstring(`Persona "missing-parent" (referenced by persona "bare-prompt") not found`))
	})
})

// The new side is what the cluster will render: its ClusterPromptLayers,
// PromptPlatform and Namespace labels, unless the manifests hold that kind.
var _ = Describe("kubectl-persona's cluster inputs", func() {
	It("renders the new side with the cluster's guardrails and namespace labels", func() {
		ns := suite.NewNamespace()
		label := "cli-inputs-" + ns
		var nsObj corev1.Namespace
		Expect(suite.K8s.Get(suite.Ctx, client.ObjectKey{Name: ns}, &nsObj)).To(Succeed())
		nsObj.Labels[label] = "on"
		Expect(suite.K8s.Update(suite.Ctx, &nsObj)).To(Succeed())
		guardrail := fmt.Sprintf(`apiVersion: prompts.persona-operator.dev/v1alpha1
kind: ClusterPromptLayer
metadata:
  name: %s
spec:
  position: final
  namespaceSelector:
    matchLabels: {%s: "on"}
  template: |
    Never push to the default branch of %s.
`, label, label, ns)
		suite.Apply("", guardrail)
		DeferCleanup(func() {
			cpl := &unstructured.Unstructured{}
			cpl.SetAPIVersion("prompts.persona-operator.dev/v1alpha1")
			cpl.SetKind("ClusterPromptLayer")
			cpl.SetName(label)
			Expect(client.IgnoreNotFound(suite.K8s.Delete(suite.Ctx, cpl))).To(Succeed())
		})
		dir := GinkgoT().TempDir()
		persona := filepath.Join(dir, "persona.yaml")
		Expect(os.WriteFile(persona, []byte(fixtures.BarePersona("guarded", "Review the change.")), 0o644)).To(Succeed())
		suite.Apply(ns, fixtures.BarePersona("guarded", "Review the change."))
		Eventually(suite.Prompt(ns, "guarded")).Should(ContainSubstring("Never push to the default branch of " + ns + "."))
		kubeconfig := kubeconfigWithContext("envtest", ns)
		run := func(args ...string) (int, string, string) {
			var out, errOut bytes.Buffer
			code := cli.Run(append(args, "--kubeconfig", kubeconfig, "--context", "envtest"), nil, &out, &errOut)
			return code, out.String(), errOut.String()
		}

		By("diff --live: no difference, though the manifests hold neither the guardrail nor the Namespace")
		code, out, errOut := run("diff", "--live", "-f", persona)
		Expect(out).To(BeEmpty())
		Expect(code).To(Equal(cli.DiffNone), errOut)
		Expect(errOut).To(ContainSubstring("ClusterPromptLayers: from the cluster ("))
		Expect(errOut).To(ContainSubstring(label))

		By("diff --live: the manifests' ClusterPromptLayers are the whole set, so the cluster's guardrail shows as removed")
		other := filepath.Join(dir, "other.yaml")
		Expect(os.WriteFile(other, []byte(`apiVersion: prompts.persona-operator.dev/v1alpha1
kind: ClusterPromptLayer
metadata:
  name: elsewhere
spec:
  position: last
  namespaceSelector:
    matchLabels: {nowhere: "on"}
  template: Elsewhere.
`), 0o644)).To(Succeed())
		code, out, errOut = run("diff", "--live", "-f", persona, "-f", other)
		Expect(code).To(Equal(cli.DiffFound), errOut)
		Expect(out).To(ContainSubstring("-Never push to the default branch of " + ns + ".\n"))
		Expect(errOut).To(ContainSubstring("ClusterPromptLayers: from the manifests (elsewhere)"))

		By("render --cluster-inputs: the guardrail last, as the operator renders it")
		code, out, errOut = run("render", "--cluster-inputs", "-f", persona, "-n", ns)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal(suite.ConfigMap(ns, "guarded").Data["system-prompt.md"]))
		Expect(out).To(HaveSuffix("Never push to the default branch of " + ns + ".\n"))

		By("render --cluster-inputs -o configmap: the operator's ConfigMap, but for the revision")
		code, out, errOut = run("render", "--cluster-inputs", "-f", persona, "-n", ns, "-o", "configmap")
		Expect(code).To(Equal(0), errOut)
		var offline corev1.ConfigMap
		Expect(yaml.Unmarshal([]byte(out), &offline)).To(Succeed())
		live := suite.ConfigMap(ns, "guarded")
		Expect(offline.Annotations).To(HaveKey(delivery.GuardrailsAnnotation))
		Expect(without(live.Annotations, delivery.RevisionAnnotation)).To(Equal(offline.Annotations))
		Expect(live.Labels).To(Equal(offline.Labels))
		Expect(without(live.Data, render.RevisionKey)).To(Equal(offline.Data))

		By("render without --cluster-inputs: no guardrail, and no kubeconfig read")
		var plain, plainErr bytes.Buffer
		Expect(cli.Run([]string{"render", "-f", persona, "-n", ns}, nil, &plain, &plainErr)).To(Equal(0), plainErr.String())
		Expect(plain.String()).NotTo(ContainSubstring("Never push"))
		Expect(cli.Run([]string{"render", "-f", persona, "--kubeconfig", kubeconfig}, nil, &plain, &plainErr)).To(Equal(2))
		Expect(plainErr.String()).To(ContainSubstring("--kubeconfig applies to --cluster-inputs"))

		By("validate --cluster-inputs: what the cluster gave is rendered, not counted as the manifests'")
		code, out, errOut = run("validate", "--cluster-inputs", "-f", persona, "-n", ns)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("1 Persona, 0 PromptLayers, 0 ConfigMaps: valid\n"))
	})
})

// configMapReader writes a kubeconfig of a user who may only get the
// ConfigMaps of ns.
func configMapReader(ns string) string {
	name := "configmap-reader-" + ns
	user, err := suite.Plane.Env.AddUser(envtest.User{Name: name}, nil)
	Expect(err).NotTo(HaveOccurred())
	raw, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	Expect(suite.K8s.Create(suite.Ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	})).To(Succeed())
	Expect(suite.K8s.Create(suite.Ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	})).To(Succeed())
	path := filepath.Join(GinkgoT().TempDir(), "reader.kubeconfig")
	Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
	return path
}

// kubeconfigWithContext writes a kubeconfig of the suite's administrator
// whose current context points nowhere and whose context name points at
// the suite's cluster with namespace ns: what diff reads must be the
// context --context names.
func kubeconfigWithContext(name, ns string) string {
	cfg, err := clientcmd.LoadFromFile(suite.Plane.AdminKubeconfig)
	Expect(err).NotTo(HaveOccurred())
	admin := *cfg.Contexts[cfg.CurrentContext]
	admin.Namespace = ns
	cfg.Contexts[name] = &admin
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: admin.AuthInfo}
	cfg.CurrentContext = "elsewhere"
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}
