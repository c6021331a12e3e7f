package webhook

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// allocatedDuring is what f allocates, run with the garbage collector off,
// so that every allocation counts.
func allocatedDuring(f func()) int64 {
	runtime.GC()
	gc := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gc)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// allocatedServing serves a POST of body to path by handler, and returns
// the answer and what serving it allocated.
func allocatedServing(handler http.Handler, path string, body []byte) (*httptest.ResponseRecorder, int64) {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	return rec, allocatedDuring(func() { handler.ServeHTTP(rec, req) })
}

// repeat is n bytes of item, comma-separated.
func repeat(item string, n int) string {
	return strings.TrimSuffix(strings.Repeat(item+",", n/(len(item)+1)), ",")
}

// TestPodWeightCoversWhatAnInjectionAllocates: for the shapes of pod
// whose values decode to the most memory a byte, the injection, from the
// body to the patch, allocates no more than the review weighs (with the
// garbage collector off, so that every allocation counts).
func TestPodWeightCoversWhatAnInjectionAllocates(t *testing.T) {
	const n = 256 << 10
	labels := `"labels":{"prompts.persona-operator.dev/persona":"reviewer"}`
	container := `{"name":"agent","image":"busybox"`
	var keys strings.Builder
	for i := 0; keys.Len() < n; i++ {
		fmt.Fprintf(&keys, `,"k%d":""`, i)
	}
	shapes := map[string]string{
		"a long annotation":        `{"metadata":{` + labels + `,"annotations":{"a":"` + strings.Repeat("x", n) + `"}},"spec":{"containers":[` + container + `}]}}`,
		"many annotations":         `{"metadata":{` + labels + `,"annotations":{"a":""` + keys.String() + `}},"spec":{"containers":[` + container + `}]}}`,
		"empty containers":         `{"metadata":{` + labels + `},"spec":{"containers":[` + repeat("{}", n) + `]}}`,
		"empty ephemeral ones":     `{"metadata":{` + labels + `},"spec":{"containers":[` + container + `}],"ephemeralContainers":[` + repeat("{}", n) + `]}}`,
		"empty volume mounts":      `{"metadata":{` + labels + `},"spec":{"containers":[` + container + `,"volumeMounts":[` + repeat("{}", n) + `]}]}}`,
		"empty volumes":            `{"metadata":{` + labels + `},"spec":{"volumes":[` + repeat("{}", n) + `],"containers":[` + container + `}]}}`,
		"short variables":          `{"metadata":{` + labels + `},"spec":{"containers":[` + container + `,"env":[` + repeat(`{"name":"A"}`, n) + `]}]}}`,
		"variables with values":    `{"metadata":{` + labels + `},"spec":{"containers":[` + container + `,"env":[` + repeat(`{"name":"A","value":"b"}`, n) + `]}]}}`,
		"empty tolerations":        `{"metadata":{` + labels + `},"spec":{"tolerations":[` + repeat("{}", n) + `],"containers":[` + container + `}]}}`,
		"empty resource claims":    `{"metadata":{` + labels + `},"spec":{"resourceClaims":[` + repeat("{}", n) + `],"containers":[` + container + `}]}}`,
		"empty owner references":   `{"metadata":{` + labels + `,"ownerReferences":[` + repeat("{}", n) + `]},"spec":{"containers":[` + container + `}]}}`,
		"empty managed fields":     `{"metadata":{` + labels + `,"managedFields":[` + repeat("{}", n) + `]},"spec":{"containers":[` + container + `}]}}`,
		"empty host aliases":       `{"metadata":{` + labels + `},"spec":{"hostAliases":[` + repeat("{}", n) + `],"containers":[` + container + `}]}}`,
		"empty topology spreads":   `{"metadata":{` + labels + `},"spec":{"topologySpreadConstraints":[` + repeat("{}", n) + `],"containers":[` + container + `}]}}`,
		"empty container ports":    `{"metadata":{` + labels + `},"spec":{"containers":[` + container + `,"ports":[` + repeat("{}", n) + `]}]}}`,
		"empty projected sources":  `{"metadata":{` + labels + `},"spec":{"volumes":[{"name":"p","projected":{"sources":[` + repeat("{}", n) + `]}}],"containers":[` + container + `}]}}`,
		"empty init containers":    `{"metadata":{` + labels + `},"spec":{"containers":[` + container + `}],"initContainers":[` + repeat("{}", n) + `]}}`,
		"empty scheduling gates":   `{"metadata":{` + labels + `},"spec":{"schedulingGates":[` + repeat("{}", n) + `],"containers":[` + container + `}]}}`,
		"empty readiness gates":    `{"metadata":{` + labels + `},"spec":{"readinessGates":[` + repeat("{}", n) + `],"containers":[` + container + `}]}}`,
		"escaped annotation":       `{"metadata":{` + labels + `,"annotations":{"a":"` + strings.Repeat("<", n) + `"}},"spec":{"containers":[` + container + `}]}}`,
		"empty image pull secrets": `{"metadata":{` + labels + `},"spec":{"imagePullSecrets":[` + repeat("{}", n) + `],"containers":[` + container + `}]}}`,
	}
	handler := &webhook.Admission{Handler: &Injector{Personas: failing{}, ConfigMaps: failing{}}}
	for name, object := range shapes {
		body := podReview("u", "", 0)
		body = bytes.Replace(body, body[bytes.Index(body, []byte(`"object":`))+len(`"object":`):len(body)-2], []byte(object), 1)
		tokens := jsonTokens(body)
		weight := int64(podBytesWeight*len(body)) + podTokenWeight*tokens + 5*podBytesWeight*escapedBytes(body)
		rec, allocated := allocatedServing(handler, InjectPath, body)
		t.Logf("%-24s %7d bytes, %6d tokens: allocated %5.1f MiB, weighs %5.1f MiB", name, len(body), tokens, float64(allocated)/(1<<20), float64(weight)/(1<<20))
		if rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", name, rec.Code, rec.Body)
		}
		if allocated > weight {
			t.Errorf("%s: the injection allocated %d bytes, more than its weight of %d", name, allocated, weight)
		}
	}
}
