package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// failing is a cache that cannot answer yet.
type failing struct{}

func (failing) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errNotSynced
}

func (failing) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errNotSynced
}

func podCreate(t testing.TB, namespace string, labels map[string]string) admission.Request {
	t.Helper()
	return podCreateMounting(t, namespace, labels, "")
}

// podCreateMounting is podCreate of a pod that mounts configMap whole by
// hand, unless it is "".
func podCreateMounting(t testing.TB, namespace string, labels map[string]string, configMap string) admission.Request {
	t.Helper()
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: namespace, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "busybox"}}}}
	if configMap != "" {
		pod.Spec.Volumes = []corev1.Volume{{Name: "prompt", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "prompt", MountPath: "/etc/persona"}}
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: namespace, Name: "agent",
		Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Object: runtime.RawExtension{Raw: raw},
	}}
}

// A pod the webhook should never have been sent (no label, or another
// shard's namespace) passes unchanged, without a lookup.
func TestInjectorLetsOtherPodsThrough(t *testing.T) {
	objects := &notFound{}
	i := &Injector{Personas: objects, ConfigMaps: objects, Namespaces: []string{"team-a"}}
	for name, req := range map[string]admission.Request{
		"unlabelled":          podCreate(t, "team-a", nil),
		"another shard's pod": podCreate(t, "team-b", map[string]string{"prompts.persona-operator.dev/persona": "reviewer"}),
	} {
		resp := i.Handle(context.Background(), req)
		if !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("%s: %+v", name, resp)
		}
	}
	if objects.gets != 0 {
		t.Errorf("%d lookups", objects.gets)
	}
}

// Caches that cannot answer yet (a starting manager) give the live
// ConfigMap, which is always right, with a warning that says so.
func TestInjectorWithoutCachesMountsTheLiveConfigMap(t *testing.T) {
	i := &Injector{Personas: failing{}, ConfigMaps: failing{}}
	resp := i.Handle(context.Background(), podCreate(t, "team-a", map[string]string{"prompts.persona-operator.dev/persona": "reviewer"}))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "the live ConfigMap persona-reviewer is mounted") {
		t.Fatalf("%+v", resp)
	}
	patch, _ := json.Marshal(resp.Patches)
	if !strings.Contains(string(patch), `"name":"persona-reviewer"`) || strings.Contains(string(patch), "PERSONA_REVISION") {
		t.Errorf("patch %s", patch)
	}
}

// The patch holds the injection alone: a field the operator's types do not
// know, and a quantity written otherwise than they would encode it, stay as
// the pod has them.
func TestInjectorPatchesOnlyWhatItAdds(t *testing.T) {
	raw := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"agent","namespace":"team-a","labels":{"prompts.persona-operator.dev/persona":"reviewer"}},
"spec":{"futureField":{"x":1},"containers":[{"name":"agent","image":"busybox","resources":{"limits":{"cpu":"1000m"}}}]}}`
	req := podCreate(t, "team-a", nil)
	req.Object.Raw = []byte(raw)
	resp := (&Injector{Personas: failing{}, ConfigMaps: failing{}}).Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("%+v", resp)
	}
	for _, op := range resp.Patches {
		if op.Operation != "add" || strings.Contains(op.Path, "futureField") || strings.Contains(op.Path, "resources") {
			t.Errorf("patch operation %s %s: the injection only adds", op.Operation, op.Path)
		}
	}
	if len(resp.Patches) == 0 {
		t.Error("no patch")
	}
}

// configMapReader answers for one ConfigMap's metadata, as the API server would.
type configMapReader struct{ m *metav1.PartialObjectMetadata }

func (r configMapReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.m == nil || key.Name != r.m.Name {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	r.m.DeepCopyInto(obj.(*metav1.PartialObjectMetadata))
	return nil
}

func (configMapReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errNotSynced
}

// While the caches cannot say whether the Persona exists (a starting
// manager), its persona-<name> is read from the API server: a pod is
// admitted when that does not exist, or when a Persona of that name
// controls it, and refused when it exists and none does. A snapshot the
// pod mounts by hand is the Persona's only with a snapshot's labels too.
func TestInjectorWithoutCachesChecksWhoseTheConfigMapIs(t *testing.T) {
	controller := metav1.OwnerReference{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "reviewer", UID: "u1", Controller: new(true)}
	other := controller
	other.Name = "writer"
	snapshotLabels := map[string]string{"app.kubernetes.io/managed-by": "persona-operator",
		"prompts.persona-operator.dev/persona": "reviewer", "prompts.persona-operator.dev/revision": "7"}
	for _, tc := range []struct {
		name      string
		configMap string // "persona-reviewer" when empty, not mounted by hand
		labels    map[string]string
		owners    []metav1.OwnerReference
		exists    bool
		allowed   bool
	}{
		{"not there yet", "", nil, nil, false, true},
		{"controlled by a Persona of its name", "", nil, []metav1.OwnerReference{controller}, true, true},
		{"controlled by no one", "", nil, nil, true, false},
		{"controlled by another Persona", "", nil, []metav1.OwnerReference{other}, true, false},
		{"a snapshot controlled by the Persona", "persona-reviewer.r7", snapshotLabels, []metav1.OwnerReference{controller}, true, true},
		{"a snapshot's name controlled by the Persona without its labels", "persona-reviewer.r7", nil, []metav1.OwnerReference{controller}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := cmp.Or(tc.configMap, "persona-reviewer")
			var m *metav1.PartialObjectMetadata
			if tc.exists {
				m = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: tc.labels, OwnerReferences: tc.owners}}
			}
			i := &Injector{Personas: failing{}, ConfigMaps: failing{}, APIReader: configMapReader{m}}
			resp := i.Handle(context.Background(), podCreateMounting(t, "team-a", map[string]string{"prompts.persona-operator.dev/persona": "reviewer"}, tc.configMap))
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed %v, want %v: %+v", resp.Allowed, tc.allowed, resp.Result)
			}
			if !tc.allowed && !strings.Contains(resp.Result.Message, "ConfigMap "+name+" is not the prompt of persona reviewer") {
				t.Errorf("the refusal does not name the ConfigMap: %s", resp.Result.Message)
			}
		})
	}
}
