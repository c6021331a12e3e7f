package install

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

// The identity the bundles bind their RBAC to: the manager's ServiceAccount,
// as the API server authenticates its token in a pod.
const (
	serviceAccountUser = "system:serviceaccount:" + namespace + ":" + deploymentName
	samplesNamespace   = "samples"
)

var serviceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}

// Each bundle, installed on a real API server, lets the manager run as its
// ServiceAccount with only the bundle's RBAC: the samples become Ready with
// nothing refused (sufficient), and the ServiceAccount is refused what the
// manager does not need (minimal).
//
// The manager runs with --leader-elect, as installed: its controllers run
// only once it holds the Lease in its namespace (POD_NAMESPACE).
func TestClusterInstall(t *testing.T) {
	binary := buildManager(t)

	t.Run("install.yaml", func(t *testing.T) {
		checkBundle(t, binary, readManifest(t, "dist/install.yaml"))
	})
	t.Run("chart", func(t *testing.T) {
		if os.Getenv("PERSONA_REQUIRE_ENVTEST") != "" && os.Getenv("PERSONA_HELM") == "" {
			t.Fatal("PERSONA_REQUIRE_ENVTEST is set and PERSONA_HELM is not")
		}
		checkBundle(t, binary, renderChart(t)) // with crds/, as helm install applies them
	})
}

// buildManager builds the manager binary, skipping the test without a
// control plane to run it against.
func buildManager(t *testing.T) string {
	t.Helper()
	controlplane.RequireEnvtest(t)
	binary, err := controlplane.BuildManager(t.Context(), root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return binary
}

func checkBundle(t *testing.T, binary string, bundle objects) {
	p, err := controlplane.StartEmpty()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	ctx := t.Context()
	installBundle(ctx, t, p, bundle)

	log := startManager(ctx, t, p, binary)

	applySamples(ctx, t, p.Client)
	waitPersonasReady(ctx, t, p.Client, 60*time.Second)
	sa, err := client.New(p.Impersonating(serviceAccountUser, serviceAccountGroups...), client.Options{Scheme: controlplane.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	checkRights(ctx, t, p.Client, sa)
	checkSecretWrites(ctx, t, p.Client, sa)
	// Last, so that the manager has posted the events of its renders.
	if strings.Contains(strings.ToLower(log.String()), "forbidden") {
		t.Errorf("the manager was refused something: its log has \"forbidden\"")
	}
}

// startManager starts the manager as installed: as its ServiceAccount, in
// its namespace, with --leader-elect. It stops with the test, whose log shows
// the manager's when it failed.
func startManager(ctx context.Context, t *testing.T, p *controlplane.Plane, binary string) *controlplane.LogBuffer {
	t.Helper()
	log := &controlplane.LogBuffer{}
	t.Setenv("POD_NAMESPACE", namespace)
	m, err := p.NewManagerAs(binary, log, serviceAccountUser, serviceAccountGroups, "--leader-elect")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = m.Stop()
		if t.Failed() {
			t.Logf("manager log (tail):\n%s", log.Tail(20<<10))
		}
	})
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return log
}

// installBundle creates every object as an administrator: CRDs first, until
// established, then the namespace, then the rest, the webhooks pointed at
// the local manager.
func installBundle(ctx context.Context, t *testing.T, p *controlplane.Plane, bundle objects) {
	t.Helper()
	create := func(u *unstructured.Unstructured) {
		if err := p.Client.Create(ctx, u.DeepCopy()); err != nil {
			t.Fatalf("create %s: %v", keyOf(u), err)
		}
	}
	crds := bundle.ofKind("CustomResourceDefinition")
	for _, k := range crds.keys() {
		create(crds[k])
	}
	for _, k := range crds.keys() {
		waitEstablished(ctx, t, p.Client, crds[k].GetName())
	}
	if !bundle.has("Namespace", "", namespace) { // the chart's: helm install --create-namespace
		create(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace}}})
	}
	for _, k := range bundle.ofKind("Namespace").keys() {
		create(bundle[k])
	}
	for _, k := range bundle.keys() {
		u := bundle[k]
		switch u.GetKind() {
		case "CustomResourceDefinition", "Namespace":
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			create(toLocalServer(t, p, u))
		default:
			create(u)
		}
	}
}

func waitEstablished(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, err
		}
		for _, cond := range asList(field(crd.Object, "status", "conditions")) {
			if cond := cond.(map[string]any); cond["type"] == "Established" && cond["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not established: %v", name, err)
	}
}

// toLocalServer points each webhook of a webhook configuration at the
// manager outside the cluster: the service's path on the local port, with
// the local CA.
func toLocalServer(t *testing.T, p *controlplane.Plane, vwc *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	hook := p.Env.WebhookInstallOptions
	vwc = vwc.DeepCopy()
	webhooks := asList(vwc.Object["webhooks"])
	for _, w := range webhooks {
		w := w.(map[string]any)
		path, _ := field(w, "clientConfig", "service", "path").(string)
		w["clientConfig"] = map[string]any{
			"url":      fmt.Sprintf("https://%s:%d%s", hook.LocalServingHost, hook.LocalServingPort, path),
			"caBundle": base64.StdEncoding.EncodeToString(hook.LocalServingCAData),
		}
	}
	if len(webhooks) == 0 {
		t.Fatalf("%s has no webhooks", keyOf(vwc))
	}
	vwc.Object["webhooks"] = webhooks
	return vwc
}

// applySamples creates the Personas and PromptLayers of config/samples in
// samplesNamespace, as an administrator.
func applySamples(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: samplesNamespace}}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "config", "samples", "prompts_*.yaml"))
	if len(files) == 0 {
		t.Fatal("config/samples has no prompts_*.yaml")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := controlplane.DecodeManifest(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, u := range objs {
			u.SetNamespace(samplesNamespace)
			if err := admin.Create(ctx, u); err != nil {
				t.Fatalf("%s: create %s: %v", filepath.Base(f), keyOf(u), err)
			}
		}
	}
}

// waitPersonasReady waits until every Persona is Ready, Rendered, at its
// current generation.
func waitPersonasReady(ctx context.Context, t *testing.T, admin client.Client, timeout time.Duration) {
	t.Helper()
	var notReady []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var personas v1alpha1.PersonaList
		if err := admin.List(ctx, &personas, client.InNamespace(samplesNamespace)); err != nil {
			return false, err
		}
		notReady = nil
		for _, p := range personas.Items {
			c := meta.FindStatusCondition(p.Status.Conditions, "Ready")
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.RenderedReason || c.ObservedGeneration != p.Generation {
				notReady = append(notReady, fmt.Sprintf("%s: %+v", p.Name, c))
			}
		}
		return len(personas.Items) > 0 && len(notReady) == 0, nil
	})
	if err != nil {
		t.Fatalf("Personas not Ready within %s: %v\n%s", timeout, err, strings.Join(notReady, "\n"))
	}
}

// checkRights checks that the ServiceAccount is refused what the bundle does
// not grant it, and allowed what the manager needs.
func checkRights(ctx context.Context, t *testing.T, admin, sa client.Client) {
	t.Helper()
	otherSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: samplesNamespace, Name: "other"}}
	otherWebhooks := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "other-webhooks"}}
	for _, o := range []client.Object{otherSecret, otherWebhooks} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var persona v1alpha1.Persona
	if err := admin.Get(ctx, client.ObjectKey{Namespace: samplesNamespace, Name: "reviewer"}, &persona); err != nil {
		t.Fatal(err)
	}
	update := func(key client.ObjectKey, obj client.Object) error {
		if err := admin.Get(ctx, key, obj); err != nil {
			return err
		}
		return sa.Update(ctx, obj)
	}
	labels := map[string]string{"app": "x"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: samplesNamespace, Name: "x"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}},
		}},
	}
	holder := "x"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "rbac-check"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}

	for _, c := range []struct {
		what    string
		allowed bool
		do      func() error
	}{
		{"list Secrets cluster-wide", false, func() error { return sa.List(ctx, &corev1.SecretList{}) }},
		{"get a Secret in " + samplesNamespace, false, func() error { return sa.Get(ctx, client.ObjectKeyFromObject(otherSecret), &corev1.Secret{}) }},
		{"list Secrets in " + namespace + " without a field selector", false, func() error {
			return sa.List(ctx, &corev1.SecretList{}, client.InNamespace(namespace))
		}},
		{"delete a Persona", false, func() error { return sa.Delete(ctx, &persona) }},
		{"create a Deployment", false, func() error { return sa.Create(ctx, deployment) }},
		{"update another ValidatingWebhookConfiguration", false, func() error {
			return update(client.ObjectKeyFromObject(otherWebhooks), &admissionv1.ValidatingWebhookConfiguration{})
		}},
		{"list Personas", true, func() error { return sa.List(ctx, &v1alpha1.PersonaList{}) }},
		{"get its Secret (it reads it through a cache)", false, func() error {
			return sa.Get(ctx, client.ObjectKey{Namespace: namespace, Name: webhookSecret}, &corev1.Secret{})
		}},
		{"list its Secret by name", true, func() error {
			return sa.List(ctx, &corev1.SecretList{}, client.InNamespace(namespace), client.MatchingFields{"metadata.name": webhookSecret})
		}},
		{"update its ValidatingWebhookConfiguration", true, func() error {
			return update(client.ObjectKey{Name: webhookConfig}, &admissionv1.ValidatingWebhookConfiguration{})
		}},
		{"take a Lease in " + namespace, true, func() error { return sa.Create(ctx, lease) }},
	} {
		err := c.do()
		switch {
		case c.allowed && err != nil:
			t.Errorf("%s: want allowed, got %v", c.what, err)
		case !c.allowed && !apierrors.IsForbidden(err):
			t.Errorf("%s: want forbidden, got %v", c.what, err)
		}
	}
}
