package webhook_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/fixtures"
	"github.com/persona-operator/persona-operator/test/scrape"
	"github.com/persona-operator/persona-operator/test/suite"
)

var _ = Describe("Memory against the cluster", func() {
	It("bounds the webhook's memory: 20 concurrent dry-run creates of maximal Personas move its RSS by at most 96 MiB, and an ordinary create is answered within 1 s after", func() {
		const (
			concurrent = 20
			limit      = 96 << 20
		)
		ns := suite.NewNamespace()
		personas := make([]*v1alpha1.Persona, concurrent)
		for i := range personas {
			personas[i] = maximalPersona(ns, fmt.Sprintf("max-%02d", i), fmt.Sprintf("persona %d", i))
		}
		raw, err := json.Marshal(personas[0])
		Expect(err).NotTo(HaveOccurred())
		templates := len(personas[0].Spec.SystemPrompt.Platform) + len(personas[0].Spec.SystemPrompt.Extensions)

		turnedAwayBefore := turnedAway()
		before := suite.ManagerRSS()
		peakRSS := samplePeakRSS(20 * time.Millisecond)

		errs := make([]error, concurrent)
		var wg sync.WaitGroup
		for i, p := range personas {
			wg.Go(func() { errs[i] = suite.K8s.Create(suite.Ctx, p, client.DryRunAll) })
		}
		// An ordinary create while the maximal ones are being validated.
		time.Sleep(2 * time.Second)
		start := time.Now()
		suite.Apply(ns, fixtures.BarePersona("during", "Be brief."))
		during := time.Since(start)
		wg.Wait()
		peak := peakRSS()
		turned := turnedAway()
		for reason, n := range turnedAwayBefore {
			if turned[reason] -= n; turned[reason] == 0 {
				delete(turned, reason)
			}
		}

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
		suite.Apply(ns, fixtures.BarePersona("ordinary", "Be brief."))
		answered := time.Since(start)

		AddReportEntry("webhook under load", fmt.Sprintf(
			"%d concurrent dry-run creates of %.2f MiB (%d templates of 64 KiB): %d validated, %d denied by the bound, %d failed; "+
				"manager RSS %.1f MiB before, peak %.1f MiB (+%.1f MiB); an ordinary create answered in %v during them, in %v after; "+
				"turned away at the webhook's bounds, by reason: %v",
			concurrent, float64(len(raw))/(1<<20), templates, admitted, denied, len(failed),
			float64(before)/(1<<20), float64(peak)/(1<<20), float64(peak-before)/(1<<20), during, answered, turned))
		Expect(failed).To(BeEmpty(), "turned away at the webhook's bounds, by reason: %v", turned)
		Expect(admitted).To(BeNumerically(">=", 1), "no maximal Persona was validated")
		Expect(peak-before).To(BeNumerically("<=", limit), "RSS went from %d to %d bytes", before, peak)
		Expect(answered).To(BeNumerically("<", time.Second))
		err = suite.K8s.Get(suite.Ctx, client.ObjectKey{Namespace: ns, Name: "max-00"}, &v1alpha1.Persona{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a dry run stored a Persona: %v", err)
	})
})

// samplePeakRSS samples the manager's RSS every interval until the returned
// function is called, which returns the peak seen, its own reading included.
func samplePeakRSS(interval time.Duration) func() int64 {
	peak := suite.ManagerRSS()
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(interval):
				peak = max(peak, suite.ManagerRSS())
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-sampled
		return max(peak, suite.ManagerRSS())
	}
}

// turnedAway is what the manager's validating webhook has turned away at
// its bounds so far, by reason.
func turnedAway() map[string]float64 {
	s, err := scrape.Get(suite.Ctx, metricsURL)
	Expect(err).NotTo(HaveOccurred())
	return s.SumBy("persona_webhook_requests_turned_away_total", "reason", map[string]string{"webhook": "validating"})
}
