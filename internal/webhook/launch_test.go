package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// countingReader counts the reads of the API server, and fails them with
// err when it is set.
type countingReader struct {
	client.Reader
	gets atomic.Int32
	err  error
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets.Add(1)
	if r.err != nil {
		return r.err
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// launchFixture is Persona reviewer at revision 1, whose snapshot holds
// bundle, with the caches and the API server that hold it.
func launchFixture(t *testing.T, bundle string) (cached client.Client, api *countingReader) {
	t.Helper()
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Name: "reviewer", Namespace: "team", UID: "u1"},
		Spec:   v1alpha1.PersonaSpec{Variants: []v1alpha1.Variant{{Name: "fast"}}},
		Status: v1alpha1.PersonaStatus{CurrentRevision: 1}}
	snapshot := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: delivery.SnapshotName("reviewer", 1), Namespace: "team", UID: "s1",
		Labels:          delivery.SnapshotLabels("reviewer", 1),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "reviewer", UID: "u1", Controller: new(true)}}},
		Data: map[string]string{"bundle.json": bundle}}
	cached = fake.NewClientBuilder().WithScheme(controlplane.Scheme).WithObjects(p, snapshot).Build()
	return cached, &countingReader{Reader: fake.NewClientBuilder().WithScheme(controlplane.Scheme).WithObjects(snapshot).Build()}
}

func launchPod(t *testing.T, annotations map[string]string) admission.Request {
	t.Helper()
	raw, err := json.Marshal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "team",
		Labels: map[string]string{delivery.PersonaLabel: "reviewer"}, Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "team",
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}}
}

// launchEnv is the launch variables a response's patch sets, name=value.
func launchEnv(t *testing.T, resp admission.Response) []string {
	t.Helper()
	var out []string
	for _, op := range resp.Patches {
		raw, _ := json.Marshal(op.Value)
		var envs []corev1.EnvVar
		if strings.HasSuffix(op.Path, "/env") && json.Unmarshal(raw, &envs) == nil {
			for _, e := range envs {
				if strings.HasPrefix(e.Name, "PERSONA_HARNESS") || e.Name == "PERSONA_MODEL" || e.Name == "PERSONA_REASONING_EFFORT" {
					out = append(out, e.Name+"="+e.Value)
				}
			}
		}
	}
	return out
}

const launchBundle = `{"version":1,"persona":{"name":"reviewer","namespace":"team","prompt":"Body","model":"gpt-5.1-codex","harness":"codex"},` +
	`"context":{},"sections":[],"variants":[{"name":"fast","model":"gpt-5.1-codex-mini","harnessPrompt":"replace"}]}` + "\n"

// The pods of one revision cost one read of its snapshot, however many
// come at once: the first reads it, the others share the read or what was
// kept of it.
func TestLaunchVariablesCostOneReadPerSnapshot(t *testing.T) {
	cached, api := launchFixture(t, launchBundle)
	i := &Injector{Personas: cached, ConfigMaps: cached, Snapshots: fixtures.ListedSnapshots{Reader: cached}, APIReader: api}
	want := []string{"PERSONA_HARNESS=codex", "PERSONA_MODEL=gpt-5.1-codex", "PERSONA_REASONING_EFFORT=", "PERSONA_HARNESS_PROMPT=keep"}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			resp := i.Handle(context.Background(), launchPod(t, nil))
			if got := launchEnv(t, resp); !resp.Allowed || strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("allowed %v, launch variables %v, want %v", resp.Allowed, got, want)
			}
		})
	}
	wg.Wait()
	resp := i.Handle(context.Background(), launchPod(t, map[string]string{"prompts.persona-operator.dev/variant": "fast"}))
	want = []string{"PERSONA_HARNESS=codex", "PERSONA_MODEL=gpt-5.1-codex-mini", "PERSONA_REASONING_EFFORT=", "PERSONA_HARNESS_PROMPT=replace"}
	if got := launchEnv(t, resp); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the variant's launch variables %v, want %v", got, want)
	}
	if n := api.gets.Load(); n != 1 {
		t.Errorf("%d reads of the snapshot, want 1", n)
	}
}

// A snapshot whose bundle.json cannot be read leaves the launch variables
// unset, with a warning that says so: the pod is injected all the same, and
// its launcher reads bundle.json.
func TestLaunchVariablesUnreadable(t *testing.T) {
	for name, c := range map[string]struct {
		bundle string
		err    error
		cause  string
	}{
		"the API server fails": {launchBundle, errors.New("connection refused"), "read ConfigMap persona-reviewer.r1: connection refused"},
		"no bundle.json":       {"", nil, "the bundle.json of ConfigMap persona-reviewer.r1: read bundle: unexpected end of JSON input"},
	} {
		t.Run(name, func(t *testing.T) {
			cached, api := launchFixture(t, c.bundle)
			api.err = c.err
			resp := (&Injector{Personas: cached, ConfigMaps: cached, Snapshots: fixtures.ListedSnapshots{Reader: cached}, APIReader: api}).Handle(context.Background(), launchPod(t, nil))
			if !resp.Allowed || len(launchEnv(t, resp)) != 0 {
				t.Fatalf("allowed %v, launch variables %v: want the pod injected without them", resp.Allowed, launchEnv(t, resp))
			}
			want := "PERSONA_HARNESS, PERSONA_MODEL, PERSONA_REASONING_EFFORT and PERSONA_HARNESS_PROMPT are not set (read them from bundle.json): " + c.cause
			if len(resp.Warnings) != 1 || resp.Warnings[0] != want {
				t.Errorf("warnings %q, want %q", resp.Warnings, want)
			}
		})
	}
}

// slowReader answers once release is closed.
type slowReader struct {
	client.Reader
	release chan struct{}
	gets    atomic.Int32
}

func (r *slowReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets.Add(1)
	<-r.release
	return r.Reader.Get(ctx, key, obj, opts...)
}

// A slow API server never holds pods for long: a pod waits for the read of
// its snapshot at most launchWait after the read began, and is injected
// without the launch variables when it has not ended; pods that come while
// it goes on are not held at all, and those after it get what it read.
func TestLaunchVariablesOfASlowRead(t *testing.T) {
	cached, api := launchFixture(t, launchBundle)
	slow := &slowReader{Reader: api.Reader, release: make(chan struct{})}
	i := &Injector{Personas: cached, ConfigMaps: cached, Snapshots: fixtures.ListedSnapshots{Reader: cached}, APIReader: slow}
	start := time.Now()
	resp := i.Handle(context.Background(), launchPod(t, nil))
	if waited := time.Since(start); waited < launchWait || waited > launchWait+500*time.Millisecond {
		t.Errorf("the first pod waited %v, want about %v", waited, launchWait)
	}
	const unset = "PERSONA_HARNESS, PERSONA_MODEL, PERSONA_REASONING_EFFORT and PERSONA_HARNESS_PROMPT are not set (read them from bundle.json): "
	if !resp.Allowed || len(launchEnv(t, resp)) != 0 || !slices.Equal(resp.Warnings, []string{unset + "read ConfigMap persona-reviewer.r1: its read has not ended yet"}) {
		t.Fatalf("allowed %v, launch variables %v, warnings %q", resp.Allowed, launchEnv(t, resp), resp.Warnings)
	}
	start = time.Now()
	if resp := i.Handle(context.Background(), launchPod(t, nil)); !resp.Allowed || len(launchEnv(t, resp)) != 0 || time.Since(start) > 500*time.Millisecond {
		t.Errorf("a pod while the read goes on: allowed %v, launch variables %v, after %v", resp.Allowed, launchEnv(t, resp), time.Since(start))
	}
	close(slow.release)
	waitForLaunch(t, i)
	if n := slow.gets.Load(); n != 1 {
		t.Errorf("%d reads, want the one", n)
	}
}

// waitForLaunch fails t unless a pod gets its launch variables within a
// second, once a read under way has ended.
func waitForLaunch(t *testing.T, i *Injector) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if len(launchEnv(t, i.Handle(context.Background(), launchPod(t, nil)))) == 4 {
			return
		}
	}
	t.Error("no pod got its launch variables after the read ended")
}

// delayedReader answers each read after delay.
type delayedReader struct {
	client.Reader
	delay time.Duration
}

func (r *delayedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	time.Sleep(r.delay)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// Reviews sent to the port by another client, asking for the reads of a
// dozen snapshots at once, hold up the API server's pod by one turn: its
// read takes its turn beside theirs, and it gets its launch settings well
// within launchWait, where it waited behind all twelve reads (1.2 s).
func TestLaunchReadsTakeTurnsByClient(t *testing.T) {
	_, api := launchFixture(t, launchBundle)
	r := newLaunchReader(&delayedReader{Reader: api.Reader, delay: 200 * time.Millisecond})
	other := withClient(context.Background(), "10.0.0.9")
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.launches(other, "team", delivery.SnapshotName("forged", int64(i+1)), types.UID(fmt.Sprint("forged-", i)))
		}()
	}
	defer wg.Wait()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	l, err := r.launches(withClient(context.Background(), "10.0.0.1"), "team", delivery.SnapshotName("reviewer", 1), "s1")
	took := time.Since(start)
	if err != nil || l == nil {
		t.Fatalf("the API server's pod got no launch settings after %v: %v", took, err)
	}
	// One read of the other client's before it, and its own.
	if took > 600*time.Millisecond {
		t.Errorf("the API server's pod waited %v for its read, want about 400 ms", took)
	}
	t.Logf("the API server's pod got its launch settings after %v", took)
}
