package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/memorylimit"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// The release's objects the checks use, as dist/install.yaml names them.
const (
	metricsService = "persona-operator-metrics-service"
	metricsReader  = "persona-operator-metrics-reader"
	leaderLease    = "persona-operator.prompts.persona-operator.dev"
	// loadRate is the Persona writes a second during a rollout.
	loadRate = 10
)

// metricsNeedAToken: the metrics Service answers a ServiceAccount token
// bound to the metrics-reader ClusterRole with the operator's metrics, one
// without the binding with 403 and a request without a token with 401. The
// metrics also give the Go memory limit the manager set itself from its
// container's (goMemoryLimitIsTheContainers).
func (s *suite) metricsNeedAToken(t *testing.T) {
	svc := &corev1.Service{}
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: installNamespace, Name: metricsService}, svc); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://%s/metrics", net.JoinHostPort(svc.Spec.ClusterIP, "8443"))
	reader, stranger := s.serviceAccountToken(t, "metrics-probe", metricsReader), s.serviceAccountToken(t, "metrics-stranger", "")
	// The metrics server's certificate is its own, self-signed.
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the server's self-signed certificate
	get := func(token string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// Each replica serves metrics; the controllers', persona_*, come from
	// the leader, which the Service reaches one request in two.
	var seen bool
	var metrics string
	if err := waitFor(time.Minute, "the leader's persona_* metrics through the Service", func() (bool, error) {
		code, body, err := get(reader)
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("status %d: %v", code, err)
		}
		seen, metrics = strings.Contains(body, "\npersona_"), body
		return seen, fmt.Errorf("no persona_ metric in the response")
	}); err != nil {
		t.Fatal(err)
	}
	s.goMemoryLimitIsTheContainers(t, metrics)
	for _, c := range []struct {
		who   string
		token string
		want  int
	}{{"a token without the binding", stranger, http.StatusForbidden}, {"no token", "", http.StatusUnauthorized}} {
		if code, _, err := get(c.token); err != nil || code != c.want {
			t.Errorf("%s: status %d (%v), want %d", c.who, code, err, c.want)
		}
	}
	t.Logf("the metrics Service at %s answers a token bound to %s with persona_* metrics, refuses one without the binding (403) and none (401)", url, metricsReader)
}

// goMemoryLimitIsTheContainers: the manager set its Go memory limit
// (go_gc_gomemlimit_bytes, in metrics, one replica's) as install.md#memory
// says, from its container's memory limit read from the node's cgroup, less
// the image of the binary it runs.
func (s *suite) goMemoryLimitIsTheContainers(t *testing.T, metrics string) {
	t.Helper()
	var deployment appsv1.Deployment
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: installNamespace, Name: managerDeployment}, &deployment); err != nil {
		t.Fatal(err)
	}
	var container *resource.Quantity
	for _, c := range deployment.Spec.Template.Spec.Containers {
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && c.Name == "manager" {
			container = &q
		}
	}
	if container == nil {
		t.Fatal("the manager container has no memory limit")
	}
	image, err := memorylimit.Image(filepath.Join(s.bin, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := memorylimit.For(uint64(container.Value()), image)
	if err != nil {
		t.Fatal(err)
	}
	scraped, err := scrape.Parse(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	if got := scraped.Sum("go_gc_gomemlimit_bytes", nil); got != float64(want) {
		t.Errorf("the manager's Go memory limit is %.0f bytes, want %d: %.0f%% of what its container's %s leaves after its %d bytes of image", got, want, 100*memorylimit.Ratio, container, image)
	} else {
		t.Logf("the manager's Go memory limit is %d bytes: %.0f%% of what its container's %s leaves after its %d bytes of image", want, 100*memorylimit.Ratio, container, image)
	}
}

// serviceAccountToken makes a ServiceAccount in the agents' namespace,
// binds it to clusterRole unless empty, and returns a token of it.
func (s *suite) serviceAccountToken(t *testing.T, name, clusterRole string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := s.c.Create(s.ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if clusterRole != "" {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
		}
		if err := s.c.Create(s.ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	clientset, err := kubernetes.NewForConfig(s.plane.Config)
	if err != nil {
		t.Fatal(err)
	}
	token, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(s.ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of ServiceAccount %s: %v", name, err)
	}
	return token.Status.Token
}

// leaderFailover deletes the leader's pod, as a node drain or a rollout
// would, and measures how long until the other replica holds the Lease and
// until an edit made just after the delete reaches its ConfigMap.
func (s *suite) leaderFailover(t *testing.T) {
	lease := &coordinationv1.Lease{}
	leaseKey := client.ObjectKey{Namespace: installNamespace, Name: leaderLease}
	if err := s.c.Get(s.ctx, leaseKey, lease); err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("the Lease %s: %v (holder %v)", leaderLease, err, lease.Spec.HolderIdentity)
	}
	leader, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	duration, renew := time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second, 10*time.Second // controller-runtime's RenewDeadline
	_, hash, err := s.renderedPrompt()
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: leader}}
	deleted := time.Now()
	if err := s.c.Delete(s.ctx, pod); err != nil {
		t.Fatalf("delete the leader's pod %s: %v", leader, err)
	}
	if err := s.edits()[0].apply(2000); err != nil {
		t.Fatal(err)
	}
	var toConfigMap, toLease time.Duration
	if err := waitForEvery(20*time.Millisecond, duration+renew+30*time.Second, "the edit in the ConfigMap and another leader", func() (bool, error) {
		if toConfigMap == 0 {
			if _, h, err := s.renderedPrompt(); err == nil && h != hash {
				toConfigMap = time.Since(deleted)
			}
		}
		if toLease == 0 {
			var l coordinationv1.Lease
			if err := s.c.Get(s.ctx, leaseKey, &l); err == nil && l.Spec.HolderIdentity != nil && !strings.HasPrefix(*l.Spec.HolderIdentity, leader+"_") && *l.Spec.HolderIdentity != "" {
				toLease = time.Since(deleted)
			}
		}
		return toConfigMap > 0 && toLease > 0, fmt.Errorf("edit in the ConfigMap after %s, another leader after %s", toConfigMap, toLease)
	}); err != nil {
		t.Fatal(err)
	}
	if limit := duration + renew + 5*time.Second; toConfigMap > limit {
		t.Errorf("the edit reached its ConfigMap %s after the leader's delete, beyond the lease duration plus the renew deadline plus 5s (%s)", toConfigMap, limit)
	}
	if err := s.waitManagerReplicas(); err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s deleted: another replica held the Lease after %s, and an edit made just after the delete was in its ConfigMap after %s (lease duration %s, renew deadline %s)",
		leader, toLease.Round(time.Millisecond), toConfigMap.Round(time.Millisecond), duration, renew)
}

// waitManagerReplicas waits for both replicas of the manager's current
// template to be Ready, and the old ones gone.
func (s *suite) waitManagerReplicas() error {
	return waitFor(3*time.Minute, "both replicas of the manager Ready", func() (bool, error) {
		var d appsv1.Deployment
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: installNamespace, Name: managerDeployment}, &d); err != nil {
			return false, err
		}
		st := d.Status
		ok := st.ObservedGeneration == d.Generation && st.UpdatedReplicas == 2 && st.ReadyReplicas == 2 && st.Replicas == 2
		return ok, fmt.Errorf("%d replicas, %d updated, %d ready%s", st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, s.managerPodStates())
	})
}

// underLoad runs change while a client writes loadRate Personas a second
// through the webhook, from before it starts until after it is done, and
// fails on any refused or failed request; then every Persona it wrote must
// be Ready.
func (s *suite) underLoad(t *testing.T, what, prefix string, change func() error) {
	load := startLoad(s.ctx, s.c, prefix, loadRate)
	time.Sleep(2 * time.Second)
	err := change()
	time.Sleep(3 * time.Second)
	load.finish()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, f := range load.failures {
		t.Errorf("a write during %s failed: %s", what, f)
	}
	for _, name := range load.names {
		if err := waitFor(time.Minute, "persona "+name+" Ready", func() (bool, error) {
			var p v1alpha1.Persona
			if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
				return false, err
			}
			ready := p.Status.ObservedGeneration == p.Generation && meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ReadyCondition)
			return ready, fmt.Errorf("not Ready at generation %d", p.Generation)
		}); err != nil {
			t.Error(err)
		}
	}
	t.Logf("during %s: %s; all %d Personas written are Ready", what, load.summary(), len(load.names))
}

// rolloutRestartUnderLoad restarts the manager's Deployment with kubectl
// while Personas are written.
func (s *suite) rolloutRestartUnderLoad(t *testing.T) {
	s.underLoad(t, "kubectl rollout restart of the manager", "rollout", func() error {
		if out, err := s.kubectl("-n", installNamespace, "rollout", "restart", "deployment/"+managerDeployment); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		if out, err := s.kubectl("-n", installNamespace, "rollout", "status", "deployment/"+managerDeployment, "--timeout=3m"); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return s.waitManagerReplicas()
	})
}

// kubectl runs envtest's kubectl as the administrator.
func (s *suite) kubectl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), append([]string{"--kubeconfig", s.plane.AdminKubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
