package webhook_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/persona-operator/persona-operator/internal/webhook"
	"github.com/persona-operator/persona-operator/test/suite"
)

// podReview is a pod create's AdmissionReview as the API server sends it,
// of a labelled pod with an annotation of annotation bytes.
func podReview(ns, uid string, annotation int) []byte {
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"` + uid + `",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"operation":"CREATE","namespace":"` + ns + `","userInfo":{"username":"tenant"},` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"agent","namespace":"` + ns + `","labels":{"prompts.persona-operator.dev/persona":"reviewer"},` +
		`"annotations":{"note":"` + strings.Repeat("x", annotation) + `"}},"spec":{"containers":[{"name":"agent","image":"busybox"}]}}}}`)
}

var _ = Describe("The pod injection's memory against the cluster", func() {
	It("bounds it: 8 concurrent 6 MiB pod reviews sent to the webhook's port, then 8 of the largest it injects, move its RSS by at most 96 MiB, and an ordinary review is answered within 1 s during them", func() {
		const (
			concurrent = 8
			limit      = 96 << 20
		)
		ns := suite.NewNamespace()
		hook := suite.Plane.Env.WebhookInstallOptions
		roots := x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM(hook.LocalServingCAData)).To(BeTrue())
		httpClient := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: hook.LocalServingHost, MinVersion: tls.VersionTLS12},
		}}
		url := fmt.Sprintf("https://%s%s?timeout=10s", net.JoinHostPort(hook.LocalServingHost, strconv.Itoa(hook.LocalServingPort)), webhook.InjectPath)
		// post sends a review and tells how it was answered: injected,
		// denied by the bound (429, in the review or as the status), or the status.
		post := func(body []byte) string {
			resp, err := httpClient.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				return err.Error()
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var review admissionv1.AdmissionReview
			switch {
			case resp.StatusCode != http.StatusOK:
				return resp.Status
			case json.Unmarshal(raw, &review) != nil || review.Response == nil:
				return "undecodable: " + string(raw[:min(len(raw), 200)])
			case review.Response.Allowed && len(review.Response.Patch) > 0:
				return "injected"
			case review.Response.Result != nil && review.Response.Result.Code == http.StatusTooManyRequests:
				return "denied by the bound"
			}
			return fmt.Sprintf("answered %+v", review.Response.Result)
		}
		// The largest review the bound lets in: its weight, with room for
		// its few JSON tokens, fills the lane of large pod reviews.
		largest := podReview(ns, "largest", 0)
		largest = podReview(ns, "largest", webhook.HeavyPodInflightBytes/webhook.PodBytesWeight-len(largest)-(64<<10))
		oversized := podReview(ns, "oversized", 6<<20)

		before := suite.ManagerRSS()
		peakRSS := samplePeakRSS(10 * time.Millisecond)

		answers := make([]string, 2*concurrent)
		var wg sync.WaitGroup
		for i := range concurrent {
			wg.Go(func() { answers[i] = post(oversized) })
		}
		wg.Wait()
		for i := range concurrent {
			wg.Go(func() { answers[concurrent+i] = post(largest) })
		}
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		ordinary := post(podReview(ns, "ordinary", 100))
		during := time.Since(start)
		wg.Wait()
		peak := peakRSS()

		counts := map[string]int{}
		for _, a := range answers {
			counts[a]++
		}
		AddReportEntry("pod injection under load", fmt.Sprintf(
			"%d concurrent reviews of %.2f MiB, then %d of %.2f MiB (the largest the bound injects): %v; "+
				"manager RSS %.1f MiB before, peak %.1f MiB (+%.1f MiB); an ordinary review %s in %v during them",
			concurrent, float64(len(oversized))/(1<<20), concurrent, float64(len(largest))/(1<<20), counts,
			float64(before)/(1<<20), float64(peak)/(1<<20), float64(peak-before)/(1<<20), ordinary, during))
		for _, a := range answers[:concurrent] {
			Expect(a).To(HavePrefix("413"), "a 6 MiB review")
		}
		for _, a := range answers[concurrent:] {
			Expect(a).To(BeElementOf("injected", "denied by the bound"), "a review of the largest size")
		}
		Expect(counts["injected"]).To(BeNumerically(">=", 1), "no review of the largest size was injected")
		Expect(ordinary).To(Equal("injected"))
		Expect(during).To(BeNumerically("<", time.Second))
		Expect(peak-before).To(BeNumerically("<=", limit), "RSS went from %d to %d bytes", before, peak)
	})
})
