package rollouts_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/persona-operator/persona-operator/internal/release"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/rollouts"
)

// qualityTemplate measures once the score a web endpoint answers: 0.9 or
// more passes, anything less fails (no failureCondition: a measurement that
// misses successCondition is Failed; failureLimit 0: one failure fails the
// metric).
const qualityTemplate = `
apiVersion: argoproj.io/v1alpha1
kind: ClusterAnalysisTemplate
metadata:
  name: prompt-quality
spec:
  args:
  - name: url
  metrics:
  - name: score
    count: 1
    successCondition: result >= 0.9
    failureLimit: 0
    provider:
      web:
        url: "{{args.url}}"
        jsonPath: "{$.score}"
        timeoutSeconds: 5
`

// scoreStub answers {"score": S} at /S, and at /slow/S after slowAnswer,
// and counts the requests of each path.
type scoreStub struct {
	mu   sync.Mutex
	hits map[string]int
}

// slowAnswer keeps an AnalysisRun running for a while, within the web
// metric's timeout of 5 seconds.
const slowAnswer = 4 * time.Second

func (s *scoreStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	score := strings.TrimPrefix(r.URL.Path, "/")
	if slow, ok := strings.CutPrefix(score, "slow/"); ok {
		score = slow
		time.Sleep(slowAnswer)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"score": %s, "model": "stub"}`, score)
}

func (s *scoreStub) requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// TestAnalysisRunsEndAsTheirMetricSays runs AnalysisRuns made from a
// ClusterAnalysisTemplate through Argo Rollouts' controller: the run whose
// endpoint answers a passing score ends Successful with no message, the one
// answering a low score Failed with the metric's message, each after one
// request of the endpoint.
func TestAnalysisRunsEndAsTheirMetricSays(t *testing.T) {
	controlplane.RequireEnvtest(t)
	dir := rollouts.Require(t)
	plane, err := controlplane.StartEmpty()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plane.Stop() })

	if _, err := rollouts.Start(t, plane, dir); err != nil {
		t.Fatal(err)
	}

	stub := &scoreStub{hits: map[string]int{}}
	server := httptest.NewServer(stub) // on 127.0.0.1
	t.Cleanup(server.Close)

	ctx := t.Context()
	objects, err := controlplane.DecodeManifest(strings.NewReader(qualityTemplate))
	if err != nil || len(objects) != 1 {
		t.Fatalf("decode the template: %d objects, %v", len(objects), err)
	}
	template := objects[0]
	if err := plane.Client.Create(ctx, template); err != nil {
		t.Fatalf("create the ClusterAnalysisTemplate: %v", err)
	}
	const ns = "releases"
	if err := plane.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, score, wantPhase, wantMessage string
	}{
		{name: "passing", score: "0.93", wantPhase: "Successful"},
		{name: "failing", score: "0.42", wantPhase: "Failed",
			wantMessage: `Metric "score" assessed Failed due to failed (1) > failureLimit (0)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := release.NewRun([]*unstructured.Unstructured{template}, ns, tc.name, map[string]string{"url": server.URL + "/" + tc.score}, nil)
			if err != nil {
				t.Fatal(err)
			}
			created := time.Now()
			if err := plane.Client.Create(ctx, run); err != nil {
				t.Fatalf("create the AnalysisRun: %v", err)
			}
			done, err := rollouts.WaitCompleted(ctx, plane.Client, ns, tc.name, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("AnalysisRun %s: %s %s after its creation", tc.name, release.RunPhase(done), time.Since(created).Round(time.Millisecond))
			if got := release.RunPhase(done); string(got) != tc.wantPhase {
				t.Errorf("phase %q, want %q (message %q)", got, tc.wantPhase, release.RunMessage(done))
			}
			if got := release.RunMessage(done); got != tc.wantMessage {
				t.Errorf("message %q, want %q", got, tc.wantMessage)
			}
			if got, want := rollouts.Measurements(done, "score"), []string{tc.score}; !slices.Equal(got, want) {
				t.Errorf("measurements of score %q, want %q", got, want)
			}
			if got := stub.requests("/" + tc.score); got != 1 {
				t.Errorf("the endpoint got %d requests for the run, want 1 (count: 1)", got)
			}
		})
	}
}
