package controllers

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// heavyPersona renders near the persona's wall-time limit on an idle core
// (personas.md#limits): its prompt and each of its 7 variants loop 40,000
// times (80,000 of the 100,000 units of a render), about 110 ms each.
func heavyPersona(name string) string {
	heavy := `{{ $s := repeat 64 "ab" }}{{ range until 40000 }}{{ $x := upper $s }}{{ end }}Heavy.`
	var variants []string
	for i := range 7 {
		variants = append(variants, fmt.Sprintf("{name: v%d, model: m%d}", i, i))
	}
	return barePersona(name, heavy, "layers: [{name: shared}]", "variants: ["+strings.Join(variants, ", ")+"]")
}

// ordinaryPersona renders text after a loop of 7,500 calls, about 20 ms
// on an idle core: a render that 15 heavy renders sharing the CPUs with it
// slow past its 250 ms.
func ordinaryPersona(text string) string {
	return barePersona("p", `{{ $s := repeat 64 "ab" }}{{ range until 7500 }}{{ $x := upper $s }}{{ end }}`+text)
}

// loadAverage is the machine's load average, as /proc/loadavg tells it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// One tenant's renders cannot take another's time: the manager renders
// one per CPU, shared fairly between namespaces, and retries a render out
// of wall time alone. The bound is the time a tenant may wait for its edit
// to be delivered (10 s) while another churns heavy Personas on the same
// manager.
var _ = Describe("Renders under contention", Label("contention"), func() {
	It("delivers another tenant's edits within 10 s, never Stalled nor GuardrailsOnly, while 15 heavy Personas churn", func() {
		heavyNS, ns := newNamespace(), newNamespace()
		apply(heavyNS, layerManifest("shared", "app", "append", "Shared 0."))
		var heavy strings.Builder
		for i := range 15 {
			fmt.Fprintf(&heavy, "---\n%s", heavyPersona(fmt.Sprintf("heavy-%02d", i)))
		}
		apply(heavyNS, heavy.String())
		DeferCleanup(func() {
			// The heavy renders stop before the next spec.
			Expect(client.IgnoreNotFound(k8s.DeleteAllOf(ctx, &v1alpha1.Persona{}, client.InNamespace(heavyNS)))).To(Succeed())
		})

		apply(ns, ordinaryPersona("Text 0."))
		Eventually(ready(ns, "p"), 30*time.Second).Should(Equal("Rendered"))

		By("the heavy tenant's shared layer is edited every 3 s")
		stop := make(chan struct{})
		var churn sync.WaitGroup
		churn.Go(func() {
			defer GinkgoRecover()
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(3 * time.Second):
				}
				Expect(tryApply(heavyNS, layerManifest("shared", "app", "append", fmt.Sprintf("Shared %d.", i)))).To(Succeed())
			}
		})
		DeferCleanup(func() { close(stop); churn.Wait() })

		By("the other tenant's Persona is watched: never Stalled, never GuardrailsOnly")
		var seen []string
		var seenMu sync.Mutex
		watching := make(chan struct{})
		var watcher sync.WaitGroup
		watcher.Go(func() {
			for {
				select {
				case <-watching:
					return
				case <-time.After(100 * time.Millisecond):
				}
				var p v1alpha1.Persona
				if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p"}, &p); err != nil {
					continue
				}
				bad := ""
				if c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.StalledCondition); c != nil && c.Status == "True" {
					bad = "Stalled: " + c.Reason + ": " + c.Message
				}
				if c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition); c != nil && c.Reason == v1alpha1.GuardrailsOnlyReason {
					bad = "GuardrailsOnly: " + c.Message
				}
				if f := fallbackOf(ns, "p")(); f != "" && f != "<missing>" {
					bad = "fallback " + f
				}
				if bad != "" {
					seenMu.Lock()
					seen = append(seen, bad)
					seenMu.Unlock()
				}
			}
		})
		stopWatching := func() { close(watching); watcher.Wait() }
		DeferCleanup(func() {
			select {
			case <-watching:
			default:
				stopWatching()
			}
		})
		// The heavy Personas' first renders and the churn begin.
		time.Sleep(6 * time.Second)

		var times []time.Duration
		for i := 1; i <= 5; i++ {
			text := fmt.Sprintf("Text %d.", i)
			start := time.Now()
			apply(ns, ordinaryPersona(text))
			Eventually(func() string {
				if ready(ns, "p")() != "Rendered" {
					return ""
				}
				return prompt(ns, "p")()
			}, 10*time.Second, 20*time.Millisecond).Should(Equal(text+"\n"), "edit %d delivered and Ready within 10 s", i)
			times = append(times, time.Since(start))
			time.Sleep(time.Second)
		}

		By("a guardrail added meanwhile reaches it with its own text")
		name := nextGuardrailName()
		labelNamespace(ns, name)
		labelNamespace(heavyNS, name)
		start := time.Now()
		newNamedGuardrail(name, v1alpha1.ClusterLayerLast, "Guarded.")
		Eventually(func() string {
			if ready(ns, "p")() != "Rendered" {
				return ""
			}
			return prompt(ns, "p")()
		}, 60*time.Second, 20*time.Millisecond).Should(Equal("Text 5.\n\nGuarded.\n"))
		guardrail := time.Since(start)
		stopWatching()
		heavyReasons := map[string]int{}
		for i := range 15 {
			heavyReasons[ready(heavyNS, fmt.Sprintf("heavy-%02d", i))()]++
		}
		GinkgoWriter.Printf("the heavy Personas by Ready reason: %v\n", heavyReasons)
		AddReportEntry("contention", fmt.Sprintf("edits delivered and Ready in %v; the guardrail in %v; load average %s", times, guardrail, loadAverage()))
		GinkgoWriter.Printf("edits delivered and Ready in %v; the guardrail in %v; load average %s\n", times, guardrail, loadAverage())
		seenMu.Lock()
		defer seenMu.Unlock()
		Expect(seen).To(BeEmpty())
	})
})
