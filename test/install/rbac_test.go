package install

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// notRequested are the rights the manager holds that it never asks for in a
// request of its own: the API server checks them on its behalf. The role
// sources say why each is held.
var notRequested = map[string]string{
	`"prompts.persona-operator.dev" personas/finalizers: update`: "OwnerReferencesPermissionEnforcement checks it when a ConfigMap's owner reference sets blockOwnerDeletion; this test's API server runs that plugin",
}

// The manager's RBAC is exactly what it uses. dist/install.yaml is
// installed on an API server that writes an audit log, and the manager runs
// as its ServiceAccount through all of its paths: it makes and injects its
// webhook certificate (a first run, without --webhook-cert-path), and again
// once its Secret is deleted, then, with
// the test's certificate, elects a leader, renders Personas with
// PromptLayers, a templateFrom ConfigMap, a ClusterPromptLayer and a
// PromptPlatform, reports a conflict, repeats an Event (a series), follows
// edits and deletes, prunes a revision snapshot,
// and serves metrics to an authorized scraper. The set of (verb, resource)
// rights of its requests must equal the set its roles grant.
func TestManagerRBACIsWhatItUses(t *testing.T) {
	binary := buildManager(t)
	audit, auditLog, err := controlplane.WithAuditLog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := controlplane.StartEmpty(audit, func(env *envtest.Environment) {
		env.ControlPlane.APIServer.Configure().Set("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	ctx := t.Context()
	admin := p.Client
	bundle := readManifest(t, "dist/install.yaml")
	installBundle(ctx, t, p, bundle)
	t.Setenv("POD_NAMESPACE", namespace)
	log := &controlplane.LogBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("manager log (tail):\n%s", log.Tail(20<<10))
		}
	})

	// 1. Its own certificate: the Secret filled, the CA injected.
	m, err := p.NewManagerAs(binary, log, serviceAccountUser, serviceAccountGroups, "--leader-elect")
	if err != nil {
		t.Fatal(err)
	}
	m.ManageCertificate = true
	// The kubelet's mount, played by the test, in a directory of its own.
	mountDir := t.TempDir()
	m.Extra = append(m.Extra, "--webhook-secret-mount-path="+mountDir)
	if err := m.Launch(); err != nil {
		t.Fatal(err)
	}
	var local admissionv1.ValidatingWebhookConfiguration
	if err := admin.Get(ctx, client.ObjectKey{Name: webhookConfig}, &local); err != nil {
		t.Fatal(err)
	}
	// The kubelet's part, which envtest lacks: the Secret, once filled, is
	// mounted where the manager reads its certificate; it injects the CA
	// only then.
	waitFor(ctx, t, 60*time.Second, "the manager makes its certificate", func() (bool, string) {
		var secret corev1.Secret
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: webhookSecret}, &secret); err != nil {
			return false, err.Error()
		}
		if len(secret.Data["tls.crt"]) == 0 {
			return false, "no tls.crt"
		}
		mountSecret(t, mountDir, &secret)
		return true, ""
	})
	waitFor(ctx, t, 60*time.Second, "the manager injects its CA", func() (bool, string) {
		var secret corev1.Secret
		var vwc admissionv1.ValidatingWebhookConfiguration
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: webhookSecret}, &secret); err != nil {
			return false, err.Error()
		}
		if err := admin.Get(ctx, client.ObjectKey{Name: webhookConfig}, &vwc); err != nil {
			return false, err.Error()
		}
		injected := string(vwc.Webhooks[0].ClientConfig.CABundle) == string(secret.Data["ca.crt"])
		return len(secret.Data["tls.crt"]) > 0 && injected, fmt.Sprintf("secret keys %d, CA injected %v", len(secret.Data), injected)
	})
	// Its Secret deleted: it creates it again, with a new CA, and injects that.
	var deleted corev1.Secret
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: webhookSecret}, &deleted); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, &deleted); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 60*time.Second, "the manager creates its deleted Secret again and injects its new CA", func() (bool, string) {
		var secret corev1.Secret
		var vwc admissionv1.ValidatingWebhookConfiguration
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: webhookSecret}, &secret); err != nil {
			return false, err.Error()
		}
		if err := admin.Get(ctx, client.ObjectKey{Name: webhookConfig}, &vwc); err != nil {
			return false, err.Error()
		}
		newCA := secret.UID != deleted.UID && !bytes.HasPrefix(secret.Data["ca.crt"], deleted.Data["ca.crt"])
		injected := string(vwc.Webhooks[0].ClientConfig.CABundle) == string(secret.Data["ca.crt"])
		return newCA && injected, fmt.Sprintf("a new CA %v, injected %v", newCA, injected)
	})
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	// Its Secret deleted while it is down: it starts without it, creates it
	// again and injects its CA, and keeps running.
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: webhookSecret}, &deleted); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, &deleted); err != nil {
		t.Fatal(err)
	}
	m, err = p.NewManagerAs(binary, log, serviceAccountUser, serviceAccountGroups, "--leader-elect")
	if err != nil {
		t.Fatal(err)
	}
	m.ManageCertificate = true
	emptyMount := t.TempDir() // the optional volume, empty while the Secret is missing
	m.Extra = append(m.Extra, "--webhook-secret-mount-path="+emptyMount)
	if err := m.Launch(); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 60*time.Second, "the manager, started without its Secret, creates it and injects its CA", func() (bool, string) {
		var secret corev1.Secret
		var vwc admissionv1.ValidatingWebhookConfiguration
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: webhookSecret}, &secret); err != nil {
			return false, err.Error()
		}
		mountSecret(t, emptyMount, &secret) // the kubelet's next sync
		if err := admin.Get(ctx, client.ObjectKey{Name: webhookConfig}, &vwc); err != nil {
			return false, err.Error()
		}
		injected := string(vwc.Webhooks[0].ClientConfig.CABundle) == string(secret.Data["ca.crt"])
		return secret.UID != deleted.UID && injected, fmt.Sprintf("injected %v", injected)
	})
	// The rotator's first read of the Secret came after the create: it did not stop the manager.
	time.Sleep(2 * time.Second)
	if strings.Contains(log.String(), "could not refresh cert on startup") {
		t.Error("the certificate rotator found no Secret at its start")
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	// The API server calls the test's manager with the test's CA again.
	var vwc admissionv1.ValidatingWebhookConfiguration
	if err := admin.Get(ctx, client.ObjectKey{Name: webhookConfig}, &vwc); err != nil {
		t.Fatal(err)
	}
	vwc.Webhooks = local.Webhooks
	if err := admin.Update(ctx, &vwc); err != nil {
		t.Fatal(err)
	}

	// 2. Everything else, with secure metrics on a local port.
	metricsPort, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	m, err = p.NewManagerAs(binary, log, serviceAccountUser, serviceAccountGroups, "--leader-elect",
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	driveManager(ctx, t, p)
	scrapeMetrics(ctx, t, p, metricsPort)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}

	granted := grantedTo(t, bundle, deploymentName)
	used, nonResource, refused := requestsOf(t, auditLog, serviceAccountUser, granted)
	for _, r := range refused {
		t.Errorf("the manager was refused: %s", r)
	}
	for _, path := range nonResource {
		if !isDiscovery(path) {
			t.Errorf("the manager requested %s, which is no discovery path", path)
		}
	}
	for _, right := range setDiff(used, granted) {
		t.Errorf("used, not granted: %s", right)
	}
	for _, right := range setDiff(granted, used) {
		if notRequested[right] == "" && !listOfWatched(right, used) {
			t.Errorf("granted, never used: %s", right)
		}
	}
	t.Logf("the manager's requests used:\n  %s", strings.Join(slices.Sorted(maps.Keys(used)), "\n  "))
	if strings.Contains(strings.ToLower(log.String()), "forbidden") {
		t.Errorf("the manager was refused something: its log has \"forbidden\"")
	}
}

// mountSecret writes the certificate Secret's files where the manager reads
// them (--webhook-secret-mount-path), as the kubelet mounts it in the pod.
func mountSecret(t *testing.T, dir string, secret *corev1.Secret) {
	t.Helper()
	for name, data := range secret.Data {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(path) })
	}
}

// driveManager takes the manager through its paths, as an administrator.
func driveManager(ctx context.Context, t *testing.T, p *controlplane.Plane) {
	t.Helper()
	admin := p.Client
	ns := "work"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"prompts.persona-operator.dev/guardrails": "standard"}}}); err != nil {
		t.Fatal(err)
	}
	create := func(manifest string) {
		t.Helper()
		objs, err := controlplane.DecodeManifest(strings.NewReader(manifest))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objs {
			if u.GetKind() != "ClusterPromptLayer" && u.GetKind() != "PromptPlatform" {
				u.SetNamespace(ns)
			}
			if err := admin.Create(ctx, u); err != nil {
				t.Fatalf("create %s: %v", keyOf(u), err)
			}
		}
	}
	create(`
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: ClusterPromptLayer
metadata: {name: guardrail}
spec:
  position: last
  namespaceSelector: {matchLabels: {prompts.persona-operator.dev/guardrails: standard}}
  template: Never push to the default branch.
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptPlatform
metadata: {name: default}
spec:
  sections:
    waiver: {remove: true}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: agents-md
  labels: {prompts.persona-operator.dev/template-source: "true"}
data: {AGENTS.md: Keep commits small.}
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata: {name: agents-md}
spec:
  source: app
  templateFrom: {configMapKeyRef: {name: agents-md, key: AGENTS.md}}
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata: {name: policy}
spec: {source: user, mode: append, template: Never commit secrets.}
`)
	layered := persona(ns, "layered", "Layered")
	_ = unstructuredSet(layered, []any{map[string]any{"name": "agents-md"}, map[string]any{"name": "policy"}}, "spec", "layers")
	// One snapshot kept besides the current one: the third revision prunes the first (a delete).
	_ = unstructuredSet(layered, int64(1), "spec", "revisionHistoryLimit")
	if err := admin.Create(ctx, layered); err != nil {
		t.Fatal(err)
	}
	waitPromptContains(ctx, t, admin, ns, "layered", "Keep commits small.", "Never commit secrets.", "Never push to the default branch.")

	// An edit, and a change of the templateFrom ConfigMap, rewrite it.
	updatePersona(ctx, t, admin, ns, "layered", "Layered, edited")
	waitPromptContains(ctx, t, admin, ns, "layered", "Layered, edited")
	var source corev1.ConfigMap
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "agents-md"}, &source); err != nil {
		t.Fatal(err)
	}
	source.Data["AGENTS.md"] = "Keep commits smaller."
	if err := admin.Update(ctx, &source); err != nil {
		t.Fatal(err)
	}
	waitPromptContains(ctx, t, admin, ns, "layered", "Keep commits smaller.")
	waitFor(ctx, t, 30*time.Second, "the snapshot past revisionHistoryLimit is pruned", func() (bool, string) {
		var first corev1.ConfigMap
		err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "persona-layered.r1"}, &first)
		return apierrors.IsNotFound(err), fmt.Sprintf("persona-layered.r1: %v", err)
	})

	// A foreign ConfigMap in the way: ConfigMapConflict.
	if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "persona-taken"}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, persona(ns, "taken", "Taken")); err != nil {
		t.Fatal(err)
	}
	waitReady(ctx, t, admin, ns, "taken", "ConfigMapConflict")

	// A second change of the templateFrom ConfigMap: the PromptLayer, at the
	// same version, gets the same Propagated Event again, which the
	// recorder sends as an Event series, by a patch.
	if err := admin.Get(ctx, client.ObjectKeyFromObject(&source), &source); err != nil {
		t.Fatal(err)
	}
	source.Data["AGENTS.md"] = "Keep commits smallest."
	if err := admin.Update(ctx, &source); err != nil {
		t.Fatal(err)
	}
	waitPromptContains(ctx, t, admin, ns, "layered", "Keep commits smallest.")
	waitFor(ctx, t, 30*time.Second, "the repeated Event is a series", func() (bool, string) {
		var events corev1.EventList
		if err := admin.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "PromptLayer" && e.Reason == "Propagated" && e.Series != nil {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none a series", len(events.Items))
	})

	// Deletes: the Persona and the templateFrom ConfigMap.
	if err := admin.Delete(ctx, persona(ns, "taken", "")); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, &source); err != nil {
		t.Fatal(err)
	}
	waitReady(ctx, t, admin, ns, "layered", "ReferenceNotFound")
}

// scrapeMetrics scrapes the manager's metrics with the token of a
// ServiceAccount bound to the metrics-reader ClusterRole: the manager
// reviews the token and the scraper's access.
func scrapeMetrics(ctx context.Context, t *testing.T, p *controlplane.Plane, port int) {
	t.Helper()
	admin := p.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "scraper"}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "persona-operator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: sa.Name}},
	}
	for _, o := range []client.Object{sa, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	token, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token.Status.Token)
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the manager's self-signed metrics certificate
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "persona_render_duration_seconds") {
		t.Fatalf("scrape: %s: %.300s", resp.Status, body)
	}
}

// requestsOf reads the audit log: the rights user's resource requests used,
// in ruleAtoms' form (with the resourceName when a rule of granted names it),
// the paths of its other requests, and its refused requests.
func requestsOf(t *testing.T, path, user string, granted map[string]bool) (used map[string]bool, nonResource, refused []string) {
	t.Helper()
	audited, err := controlplane.AuditedRequests(path, user, granted)
	if err != nil {
		t.Fatal(err)
	}
	return audited.Used, audited.NonResource, audited.Refused
}

// grantedTo is what the bundle's roles grant the ServiceAccount sa of the
// install's namespace, through its bindings, in ruleAtoms' form.
func grantedTo(t *testing.T, bundle objects, sa string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, k := range bundle.ofKind("RoleBinding", "ClusterRoleBinding").keys() {
		b := bundle[k]
		if !subjects(b)["ServiceAccount "+namespace+"/"+sa] {
			continue
		}
		ref, _ := b.Object["roleRef"].(map[string]any)
		roleNamespace := ""
		if ref["kind"] == "Role" {
			roleNamespace = b.GetNamespace()
		}
		role := bundle.get(t, fmt.Sprint(ref["kind"]), roleNamespace, fmt.Sprint(ref["name"]))
		maps.Copy(out, ruleAtoms(asList(role.Object["rules"])))
	}
	return out
}

// listOfWatched reports whether right is list of a collection that the
// manager watches: its informers start with a streaming list (a watch,
// WatchList) where the API server serves one, as this one does, and with a
// list elsewhere, so list is held for the API servers that serve none.
func listOfWatched(right string, used map[string]bool) bool {
	what, ok := strings.CutSuffix(right, ": list")
	return ok && used[what+": watch"]
}

// isDiscovery reports whether a non-resource request is API discovery,
// which Kubernetes grants every authenticated user (system:discovery).
func isDiscovery(uri string) bool {
	path, _, _ := strings.Cut(uri, "?")
	return path == "/api" || path == "/apis" || path == "/version" || strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/apis/")
}
