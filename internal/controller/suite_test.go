package controller_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// The suite runs the real kube-apiserver and etcd (envtest) and the manager
// binary, which serves the webhook, as a separate process.
var (
	plane   *controlplane.Plane
	manager *controlplane.Manager
	k8s     client.Client
	ctx     context.Context
	cancel  context.CancelFunc
	logs    = &controlplane.LogBuffer{}
	// metricsURL is the manager's metrics endpoint.
	metricsURL string
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	SetDefaultConsistentlyDuration(time.Second)
	RunSpecs(t, "Controllers Suite")
}

var _ = BeforeSuite(func() {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("PERSONA_REQUIRE_ENVTEST") != "" {
			Fail("KUBEBUILDER_ASSETS is not set")
		}
		Skip("KUBEBUILDER_ASSETS is not set: run `make test`, which builds the control plane binaries with hack/envtest-binaries.sh")
	}
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	root, err := filepath.Abs("../..")
	Expect(err).NotTo(HaveOccurred())

	binary := filepath.Join(GinkgoT().TempDir(), "manager")
	build := exec.Command("go", "build", "-o", binary, "./cmd")
	build.Dir = root
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "build the manager: %s", out)

	plane, err = controlplane.Start(root)
	Expect(err).NotTo(HaveOccurred())
	k8s = plane.Client
	port, err := controlplane.FreePort()
	Expect(err).NotTo(HaveOccurred())
	metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	manager, err = plane.NewManager(binary, logs, "--zap-log-level=info", "--reference-grace-period="+referenceGracePeriod.String(),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false")
	Expect(err).NotTo(HaveOccurred())
	Expect(manager.Start(ctx)).To(Succeed())
})

var _ = AfterSuite(func() {
	if manager != nil {
		Expect(manager.Stop()).To(Succeed())
	}
	if plane != nil {
		Expect(plane.Stop()).To(Succeed())
	}
	if cancel != nil {
		cancel()
	}
})

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		AddReportEntry("manager log (last 20 KB)", logs.Tail(20<<10))
	}
})

// referenceGracePeriod is the manager's: short, so that specs see a missing
// reference go from awaited to stalled, yet longer than the order specs'
// bound on time to Ready, so that the re-render at the end of the period
// cannot pass for a re-render on the reference's arrival.
const referenceGracePeriod = 11 * time.Second

var namespaceCount int

// newNamespace creates a namespace of the spec's own.
func newNamespace() string {
	namespaceCount++
	name := fmt.Sprintf("test-%d-%d", GinkgoParallelProcess(), namespaceCount)
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}
