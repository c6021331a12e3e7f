package main

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// install builds a kustomization of config/ as kubectl apply -k would.
func install(t *testing.T, dir string) resmap.ResMap {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../config/"+dir)
	if err != nil {
		t.Fatal(err)
	}
	return resources
}

// object decodes the one object of kind (and name, if not empty) into out.
func object(t *testing.T, resources resmap.ResMap, kind, name string, out any) {
	t.Helper()
	var found []string
	for _, r := range resources.Resources() {
		if r.GetKind() == kind && (name == "" || r.GetName() == name) {
			found = append(found, r.GetName())
			b, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(b, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s %q: found %v, want one", kind, name, found)
	}
}

func managerContainer(t *testing.T, d *appsv1.Deployment) (args []string, mounts map[string]string, secrets map[string]string) {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	mounts, secrets = map[string]string{}, map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	return c.Args, mounts, secrets
}

// The manager's defaults are the names config/default installs, so that the
// Deployment needs no arguments for them.
func TestFlagDefaultsNameWhatConfigDefaultInstalls(t *testing.T) {
	f := defaultFlags(t)
	resources := install(t, "default")

	var hook admissionregistrationv1.ValidatingWebhookConfiguration
	object(t, resources, "ValidatingWebhookConfiguration", f.webhookConfigName, &hook)
	for _, w := range hook.Webhooks {
		if svc := w.ClientConfig.Service; svc == nil || svc.Name != f.webhookServiceName {
			t.Errorf("webhook %s calls %+v, want Service %s", w.Name, svc, f.webhookServiceName)
		}
		if w.TimeoutSeconds == nil || *w.TimeoutSeconds != 10 {
			t.Errorf("webhook %s: timeoutSeconds %v, want 10", w.Name, w.TimeoutSeconds)
		}
		if len(w.ClientConfig.CABundle) != 0 {
			t.Errorf("webhook %s ships a caBundle; the manager injects it", w.Name)
		}
	}
	var inject admissionregistrationv1.MutatingWebhookConfiguration
	object(t, resources, "MutatingWebhookConfiguration", f.injectWebhookConfigName, &inject)
	for _, w := range inject.Webhooks {
		if svc := w.ClientConfig.Service; svc == nil || svc.Name != f.webhookServiceName || len(w.ClientConfig.CABundle) != 0 {
			t.Errorf("webhook %s calls %+v with a caBundle of %d bytes, want Service %s and none", w.Name, svc, len(w.ClientConfig.CABundle), f.webhookServiceName)
		}
	}
	object(t, resources, "Secret", f.webhookSecretName, &corev1.Secret{})

	var d appsv1.Deployment
	object(t, resources, "Deployment", "", &d)
	args, mounts, secrets := managerContainer(t, &d)
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--webhook-cert-path") }) {
		t.Errorf("args %v give a certificate: the manager would manage none", args)
	}
	if got := secrets[mounts[managedCertDir]]; got != f.webhookSecretName {
		t.Errorf("%s mounts Secret %q, want %q", managedCertDir, got, f.webhookSecretName)
	}
	// The manager makes a missing Secret: the pod must start without it.
	if v := d.Spec.Template.Spec.Volumes[0]; v.Secret == nil || v.Secret.Optional == nil || !*v.Secret.Optional {
		t.Errorf("volume %s: the certificate Secret is required, want optional", v.Name)
	}
	env := d.Spec.Template.Spec.Containers[0].Env
	if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
	}) {
		t.Error("no POD_NAMESPACE from the pod's namespace")
	}

	var secretRole rbacv1.Role
	object(t, resources, "Role", "persona-operator-webhook-cert-role", &secretRole)
	var hookRole rbacv1.ClusterRole
	object(t, resources, "ClusterRole", "persona-operator-webhook-config-role", &hookRole)
	names := map[string]string{"secrets": f.webhookSecretName, "validatingwebhookconfigurations": f.webhookConfigName,
		"mutatingwebhookconfigurations": f.injectWebhookConfigName}
	for _, r := range append(secretRole.Rules, hookRole.Rules...) {
		if slices.Equal(r.Verbs, []string{"create"}) && slices.Equal(r.Resources, []string{"secrets"}) {
			// A create carries no name for RBAC to match: the Secret made again when deleted.
			continue
		}
		if len(r.Resources) != 1 || !slices.Equal(r.ResourceNames, []string{names[r.Resources[0]]}) {
			t.Errorf("rule %+v: resourceNames %v, want [%s]", r, r.ResourceNames, names[r.Resources[0]])
		}
	}
}

func TestCertManagerOverlayGivesTheManagerItsCertificate(t *testing.T) {
	resources := install(t, "default-certmanager")
	var d appsv1.Deployment
	object(t, resources, "Deployment", "", &d)
	args, mounts, secrets := managerContainer(t, &d)
	if !slices.Contains(args, "--webhook-cert-path="+managedCertDir) {
		t.Errorf("args %v do not give the mounted certificate", args)
	}
	var cert struct {
		Spec struct {
			DNSNames   []string `json:"dnsNames"`
			SecretName string   `json:"secretName"`
		} `json:"spec"`
	}
	object(t, resources, "Certificate", "", &cert)
	if mounted := secrets[mounts[managedCertDir]]; cert.Spec.SecretName != mounted {
		t.Errorf("cert-manager writes Secret %q, the Deployment mounts %q", cert.Spec.SecretName, mounted)
	}
	// The manager cannot make cert-manager's Secret: the pod waits for it.
	if v := d.Spec.Template.Spec.Volumes[0]; v.Secret == nil || (v.Secret.Optional != nil && *v.Secret.Optional) {
		t.Errorf("volume %s: the cert-manager Secret is optional, want required", v.Name)
	}
	if want := "persona-operator-webhook-service.persona-operator-system.svc"; !slices.Contains(cert.Spec.DNSNames, want) {
		t.Errorf("dnsNames %v, want %s among them", cert.Spec.DNSNames, want)
	}
	for _, r := range resources.Resources() {
		if r.GetKind() == "Secret" || r.GetName() == "persona-operator-webhook-cert-role" || r.GetName() == "persona-operator-webhook-config-role" ||
			r.GetName() == "persona-operator-webhook-secret-writer" {
			t.Errorf("%s %s is installed; cert-manager makes the certificate", r.GetKind(), r.GetName())
		}
	}
}
