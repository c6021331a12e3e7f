package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// helmRelease is the release name docs/install.md installs the chart as.
const helmRelease = "persona-operator"

// upgradeTag is the tag the upgrade check moves the release to: the same
// image, imported under a second name.
const upgradeTag = "e2e-upgrade"

// upgradeImage is ref with upgradeTag for its tag.
func upgradeImage(ref string) string {
	return ref[:strings.LastIndex(ref, ":")+1] + upgradeTag
}

// TestHelm installs the chart on a fresh cluster as docs/install.md says,
// runs the samples' agent on it, upgrades the release to another image tag
// under a steady stream of Persona writes, turns on restarts on change with
// another upgrade (restarts_test.go), and uninstalls it.
func TestHelm(t *testing.T) {
	if os.Getenv("PERSONA_HELM") == "" {
		why := "PERSONA_HELM is not set: run make test-e2e, which installs helm"
		if os.Getenv("PERSONA_REQUIRE_E2E") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	s := setUp(t, installer{"dist/chart with helm", (*suite).installChart})
	for _, c := range []struct {
		name  string
		check func(t *testing.T)
	}{
		{"PodReadsTheOperatorsRender", s.podReadsTheOperatorsRender},
		{"HelmUpgradeUnderLoad", s.helmUpgradeUnderLoad},
		{"HelmUpgradeEnablesRestarts", s.helmUpgradeEnablesRestarts},
		{"RestartRollsOutTheNewPrompt", s.restartRollsOutTheNewPrompt},
		{"FailedRolloutHaltsTheRestarts", s.failedRolloutHaltsTheRestarts},
		{"RestartWavesOfTwenty", s.restartWavesOfTwenty},
		{"CanaryTasksRunBothRevisions", s.canaryTasksRunBothRevisions},
		{"HelmUninstallKeepsPersonas", s.helmUninstallKeepsPersonas},
	} {
		leaveTimeForCleanup(t, 5*time.Minute)
		if !t.Run(c.name, c.check) {
			return
		}
	}
}

// installChart installs dist/chart as docs/install.md says, and waits for
// the release to serve.
func (s *suite) installChart() error {
	if out, err := s.helm("install", helmRelease, filepath.Join(s.root, "dist", "chart"), "-n", installNamespace, "--create-namespace"); err != nil {
		return fmt.Errorf("helm install: %w: %s", err, out)
	}
	if out, err := s.kubectl("label", "namespace", installNamespace, "pod-security.kubernetes.io/enforce=restricted"); err != nil {
		return fmt.Errorf("label the namespace: %w: %s", err, out)
	}
	return s.releaseServes()
}

// helm runs PERSONA_HELM against the suite's cluster as the administrator.
func (s *suite) helm(args ...string) (string, error) {
	cmd := exec.Command(os.Getenv("PERSONA_HELM"), append([]string{"--kubeconfig", s.plane.AdminKubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(s.work, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(s.work, "helm", "config"), "HELM_DATA_HOME="+filepath.Join(s.work, "helm", "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// helmUpgradeUnderLoad upgrades the release to another image tag while
// Personas are written, and checks that both replicas run it.
func (s *suite) helmUpgradeUnderLoad(t *testing.T) {
	s.underLoad(t, "helm upgrade to the image tag "+upgradeTag, "upgrade", func() error {
		if out, err := s.helm("upgrade", helmRelease, filepath.Join(s.root, "dist", "chart"), "-n", installNamespace,
			"--reuse-values", "--set", "image.tag="+upgradeTag); err != nil {
			return fmt.Errorf("helm upgrade: %w: %s", err, out)
		}
		return s.waitManagerReplicas()
	})
	var pods corev1.PodList
	if err := s.c.List(s.ctx, &pods, client.InNamespace(installNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && !strings.HasSuffix(p.Spec.Containers[0].Image, ":"+upgradeTag) {
			t.Errorf("pod %s runs %s after the upgrade, want the tag %s", p.Name, p.Spec.Containers[0].Image, upgradeTag)
		}
	}
}

// helmUninstallKeepsPersonas uninstalls the release: the CRDs, the
// Personas and the ConfigMaps agents mount stay (Helm never deletes a
// chart's crds/).
func (s *suite) helmUninstallKeepsPersonas(t *testing.T) {
	prompt, hash, err := s.renderedPrompt()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := s.helm("uninstall", helmRelease, "-n", installNamespace, "--wait"); err != nil {
		t.Fatalf("helm uninstall: %v: %s", err, out)
	}
	if err := waitFor(2*time.Minute, "the manager's Deployment gone", func() (bool, error) {
		err := s.c.Get(s.ctx, client.ObjectKey{Namespace: installNamespace, Name: managerDeployment}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err), err
	}); err != nil {
		t.Fatal(err)
	}
	crds := &metav1.PartialObjectMetadataList{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := s.c.List(s.ctx, crds); err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, crd := range crds.Items {
		if strings.HasSuffix(crd.Name, "."+v1alpha1.GroupVersion.Group) {
			kept++
		}
	}
	if kept != 4 {
		t.Errorf("%d CRDs of %s after the uninstall, want the 4 the chart installed", kept, v1alpha1.GroupVersion.Group)
	}
	var personas v1alpha1.PersonaList
	if err := s.c.List(s.ctx, &personas, client.InNamespace(namespace)); err != nil || len(personas.Items) == 0 {
		t.Fatalf("the Personas after the uninstall: %d (%v)", len(personas.Items), err)
	}
	after, afterHash, err := s.renderedPrompt()
	if err != nil || after != prompt || afterHash != hash {
		t.Fatalf("ConfigMap %s after the uninstall: %.19s %s (%v), was %.19s %s", delivery.ConfigMapName(persona), after, afterHash, err, prompt, hash)
	}
	t.Logf("helm uninstall kept the %d CRDs, the %d Personas and the ConfigMap %s as it was", kept, len(personas.Items), delivery.ConfigMapName(persona))
}
