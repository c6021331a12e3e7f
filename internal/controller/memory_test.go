package controller_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// managerRSS is the manager process's resident memory, in bytes.
func managerRSS() int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", manager.PID()))
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			Expect(err).NotTo(HaveOccurred())
			return kb << 10
		}
	}
	Fail("no VmRSS in /proc/PID/status")
	return 0
}

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

		before := managerRSS()
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
		after := managerRSS()
		AddReportEntry("manager RSS", fmt.Sprintf("%.1f MiB before, %.1f MiB after %d MiB of unrelated ConfigMaps",
			float64(before)/(1<<20), float64(after)/(1<<20), count*perConfigMap>>20))
		Expect(after-before).To(BeNumerically("<=", limit), "RSS went from %d to %d bytes", before, after)
	})

	It("bounds the webhook's memory: 20 concurrent dry-run creates of maximal Personas move its RSS by at most 96 MiB, and an ordinary create is answered within 1 s after", func() {
		const (
			concurrent = 20
			limit      = 96 << 20
		)
		ns := newNamespace()
		personas := make([]*v1alpha1.Persona, concurrent)
		for i := range personas {
			personas[i] = maximalPersona(ns, fmt.Sprintf("max-%02d", i), fmt.Sprintf("persona %d", i))
		}
		raw, err := json.Marshal(personas[0])
		Expect(err).NotTo(HaveOccurred())
		templates := len(personas[0].Spec.SystemPrompt.Platform) + len(personas[0].Spec.SystemPrompt.Extensions)

		before := managerRSS()
		peak := before
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					peak = max(peak, managerRSS())
				}
			}
		}()

		errs := make([]error, concurrent)
		var wg sync.WaitGroup
		for i, p := range personas {
			wg.Go(func() { errs[i] = k8s.Create(ctx, p, client.DryRunAll) })
		}
		// An ordinary create while the maximal ones are being validated.
		time.Sleep(2 * time.Second)
		start := time.Now()
		apply(ns, barePersona("during", "Be brief."))
		during := time.Since(start)
		wg.Wait()
		close(stop)
		<-sampled
		peak = max(peak, managerRSS())

		// Each request is validated, or denied by the bound with its
		// reason: none fails for the webhook's sake.
		admitted, denied := 0, 0
		var failed []string
		for _, err := range errs {
			switch {
			case err == nil:
				admitted++
			case strings.Contains(err.Error(), "the webhook is validating") && strings.Contains(err.Error(), "try again in a moment"):
				denied++
			default:
				failed = append(failed, err.Error())
			}
		}

		start = time.Now()
		apply(ns, barePersona("ordinary", "Be brief."))
		answered := time.Since(start)

		AddReportEntry("webhook under load", fmt.Sprintf(
			"%d concurrent dry-run creates of %.2f MiB (%d templates of 64 KiB): %d validated, %d denied by the bound, %d failed; "+
				"manager RSS %.1f MiB before, peak %.1f MiB (+%.1f MiB); an ordinary create answered in %v during them, in %v after",
			concurrent, float64(len(raw))/(1<<20), templates, admitted, denied, len(failed),
			float64(before)/(1<<20), float64(peak)/(1<<20), float64(peak-before)/(1<<20), during, answered))
		Expect(failed).To(BeEmpty())
		Expect(admitted).To(BeNumerically(">=", 1), "no maximal Persona was validated")
		Expect(peak-before).To(BeNumerically("<=", limit), "RSS went from %d to %d bytes", before, peak)
		Expect(answered).To(BeNumerically("<", time.Second))
		err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "max-00"}, &v1alpha1.Persona{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a dry run stored a Persona: %v", err)
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

		before := managerRSS()
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
		after := managerRSS()
		AddReportEntry("manager RSS", fmt.Sprintf("%.1f MiB before, %.1f MiB after %d template sources of 1 MiB",
			float64(before)/(1<<20), float64(after)/(1<<20), count))
		Expect(after-before).To(BeNumerically("<=", limit), "RSS went from %d to %d bytes", before, after)
	})
})
