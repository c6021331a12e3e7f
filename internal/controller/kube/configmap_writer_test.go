package kube

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// answers records the body of every answer to a write.
type answers struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies []string
}

func (a *answers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err != nil || (req.Method != http.MethodPost && req.Method != http.MethodPut) {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	a.mu.Lock()
	a.bodies = append(a.bodies, string(body))
	a.mu.Unlock()
	return resp, err
}

// The writer against the real API server: what it writes is stored as
// written, it returns the version written, the API server's errors keep
// their kind, and every answer is the metadata only.
func TestConfigMapWriter(t *testing.T) {
	plane := emptyPlane(t)
	answered := &answers{}
	cfg := rest.CopyConfig(plane.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { answered.next = rt; return answered })
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewConfigMapWriter(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := client.ObjectKey{Namespace: "default", Name: "persona-writer"}
	read := func() *corev1.ConfigMap {
		var cm corev1.ConfigMap
		if err := plane.Client.Get(ctx, key, &cm); err != nil {
			t.Fatal(err)
		}
		return &cm
	}

	created := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{"team": "a"}},
		Data:       map[string]string{"system-prompt.md": "You review code.\n", "persona.md": "# writer\n"},
	}
	createdVersion, err := w.Create(ctx, created.DeepCopy())
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	stored := read()
	if createdVersion != stored.ResourceVersion {
		t.Errorf("create answered resourceVersion %q, the ConfigMap has %q", createdVersion, stored.ResourceVersion)
	}
	if len(stored.Data) != 2 || stored.Data["system-prompt.md"] != "You review code.\n" || stored.Data["persona.md"] != "# writer\n" || stored.Labels["team"] != "a" {
		t.Fatalf("stored after create: labels %v, data %q", stored.Labels, stored.Data)
	}
	if _, err := w.Create(ctx, created.DeepCopy()); !apierrors.IsAlreadyExists(err) {
		t.Errorf("create of an existing ConfigMap: %v, want AlreadyExists", err)
	}

	stale := stored.ResourceVersion
	stored.Data = map[string]string{"system-prompt.md": "You test code.\n"}
	updatedVersion, err := w.Update(ctx, stored.DeepCopy())
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	updated := read()
	if got := updated.Data; len(got) != 1 || got["system-prompt.md"] != "You test code.\n" {
		t.Errorf("data after update: %q, want the update's only", got)
	}
	if updatedVersion != updated.ResourceVersion || updatedVersion == createdVersion {
		t.Errorf("update answered resourceVersion %q, the ConfigMap has %q (created at %q)", updatedVersion, updated.ResourceVersion, createdVersion)
	}
	stored.ResourceVersion = stale
	if _, err := w.Update(ctx, stored); !apierrors.IsConflict(err) {
		t.Errorf("update at a stale resourceVersion: %v, want Conflict", err)
	}

	answered.mu.Lock()
	defer answered.mu.Unlock()
	if len(answered.bodies) != 4 {
		t.Fatalf("%d answers to writes, want 4", len(answered.bodies))
	}
	// The create's and the successful update's answers are the metadata,
	// without the data.
	for _, i := range []int{0, 2} {
		if body := answered.bodies[i]; !strings.Contains(body, "PartialObjectMetadata") || strings.Contains(body, "code.") {
			t.Errorf("answer %d to a write is not the metadata only: %q", i, body)
		}
	}
}
