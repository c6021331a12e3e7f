package controllers

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/suite"
)

var _ = Describe("Memory against the cluster", func() {
	It("holds no data of ConfigMaps that are none of its business: 180 MiB of them move its RSS by at most 20 MiB", func() {
		const (
			perConfigMap = 900 << 10
			count        = 205 // 180 MiB
			limit        = 20 << 20
		)
		// A Persona and a templateFrom layer in use, so that the watches
		// of ConfigMaps are running.
		ns := newNamespace()
		apply(ns, agentsLayer(`{AGENTS.md: "Be brief."}`))
		apply(ns, barePersona("p", "P", "layers: [{name: agents-md}]"))
		Eventually(prompt(ns, "p")).Should(Equal("P\n\nBe brief.\n"))

		before := suite.ManagerRSS()
		other := newNamespace()
		payload := strings.Repeat("x", perConfigMap)
		for i := range count {
			Expect(k8s.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bulk-%03d", i), Namespace: other},
				Data:       map[string]string{"data": payload},
			})).To(Succeed())
		}
		// The operator still works, and has seen every one of them.
		apply(ns, agentsLayer(`{AGENTS.md: "Be briefer."}`))
		Eventually(prompt(ns, "p")).Should(Equal("P\n\nBe briefer.\n"))
		time.Sleep(2 * time.Second)
		after := suite.ManagerRSS()
		AddReportEntry("manager RSS", fmt.Sprintf("%.1f MiB before, %.1f MiB after %d MiB of unrelated ConfigMaps",
			float64(before)/(1<<20), float64(after)/(1<<20), count*perConfigMap>>20))
		Expect(after-before).To(BeNumerically("<=", limit), "RSS went from %d to %d bytes", before, after)
	})

	It("keeps of a template source only the key read: 200 ConfigMaps of 1 MiB, each read by a PromptLayer through a 1-byte key, move its RSS by at most 32 MiB", func() {
		const (
			count = 200
			limit = 32 << 20
		)
		ns := newNamespace()
		// Settle the manager's heap on a first source read.
		apply(ns, agentsLayer(`{AGENTS.md: "Be brief."}`))
		apply(ns, barePersona("p", "P", "layers: [{name: agents-md}]"))
		Eventually(prompt(ns, "p")).Should(Equal("P\n\nBe brief.\n"))
		time.Sleep(2 * time.Second)

		before := suite.ManagerRSS()
		// A ConfigMap holds at most 1 MiB: the big key leaves room for the rest.
		payload := strings.Repeat("x", 1<<20-1<<10)
		for i := range count {
			name := fmt.Sprintf("source-%03d", i)
			Expect(k8s.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"prompts.persona-operator.dev/template-source": "true"}},
				Data:       map[string]string{"big": payload, "k": "y"},
			})).To(Succeed())
			apply(ns, fmt.Sprintf(`
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata: {name: %s}
spec:
  templateFrom: {configMapKeyRef: {name: %s, key: k}}
`, name, name))
		}
		// Every layer has read its key.
		Eventually(func() int {
			var list v1alpha1.PromptLayerList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			valid := 0
			for _, l := range list.Items {
				if c := meta.FindStatusCondition(l.Status.Conditions, "Ready"); c != nil && c.Reason == "Valid" && strings.HasPrefix(l.Name, "source-") {
					valid++
				}
			}
			return valid
		}, 120*time.Second).Should(Equal(count))
		time.Sleep(2 * time.Second)
		after := suite.ManagerRSS()
		AddReportEntry("manager RSS", fmt.Sprintf("%.1f MiB before, %.1f MiB after %d template sources of 1 MiB",
			float64(before)/(1<<20), float64(after)/(1<<20), count))
		Expect(after-before).To(BeNumerically("<=", limit), "RSS went from %d to %d bytes", before, after)
	})
})
