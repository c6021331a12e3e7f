package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

// The release as dist/install.yaml installs it.
const (
	installNamespace  = "persona-operator-system"
	managerDeployment = "persona-operator-controller-manager"
	webhookConfig     = "persona-operator-validating-webhook-configuration"
)

// releaseImage is the manager image dist/install.yaml's Deployment runs,
// which the suite builds and imports under that name.
func releaseImage(root string) (string, error) {
	objs, err := installManifest(root)
	if err != nil {
		return "", err
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != managerDeployment {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if c, ok := c.(map[string]any); ok && c["name"] == "manager" {
				if image, ok := c["image"].(string); ok {
					return image, nil
				}
			}
		}
	}
	return "", fmt.Errorf("dist/install.yaml has no Deployment %s with a container manager", managerDeployment)
}

func installManifest(root string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
	if err != nil {
		return nil, err
	}
	return controlplane.DecodeManifest(bytes.NewReader(raw))
}

// installRelease applies dist/install.yaml as its docs say, with kubectl,
// and waits for the release to serve (releaseServes).
func (s *suite) installRelease() error {
	if out, err := s.kubectl("apply", "--server-side", "-f", filepath.Join(s.root, "dist", "install.yaml")); err != nil {
		return fmt.Errorf("kubectl apply --server-side -f dist/install.yaml: %w: %s", err, out)
	}
	return s.releaseServes()
}

// releaseServes waits for both replicas of the manager to be Ready and for
// the webhook, reached through its Service with the certificate the manager
// made, to refuse a bad Persona.
func (s *suite) releaseServes() error {
	if err := s.waitManagerReplicas(); err != nil {
		return err
	}
	return waitFor(time.Minute, "the webhook refusing a bad Persona through its Service", func() (bool, error) {
		bad := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "e2e-refused"}}
		// A template that does not parse: only the webhook checks templates.
		bad.Spec.SystemPrompt = &v1alpha1.SystemPromptSpec{Extensions: []v1alpha1.Extension{{ID: "team", Template: "For team {{ .Vars.team }."}}}
		err := s.c.Create(s.ctx, bad, client.DryRunAll)
		if err == nil {
			return false, fmt.Errorf("a Persona whose extension does not parse was admitted")
		}
		refused := apierrors.IsInvalid(err) && strings.Contains(err.Error(), "admission webhook") && strings.Contains(err.Error(), "spec.systemPrompt.extensions[0].template")
		return refused, err
	})
}

// managerPodStates says why the manager's pods are not ready.
func (s *suite) managerPodStates() string {
	var pods corev1.PodList
	if err := s.c.List(s.ctx, &pods, client.InNamespace(installNamespace)); err != nil {
		return ""
	}
	var b strings.Builder
	for i := range pods.Items {
		if err := s.running(&pods.Items[i]); err != nil {
			fmt.Fprintf(&b, "\n  %v", err)
		}
	}
	return b.String()
}
