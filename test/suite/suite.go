// Package suite is what the envtest suites of test/integration/controllers,
// internal/webhook and internal/cli share: the control plane with the
// manager binary running against it, serving the webhook, and the steps
// their specs take on it (steps.go). Each suite's BeforeSuite calls Start
// and its AfterSuite Stop; the package's state is the running suite's.
package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

var (
	// Plane is the running control plane, Manager the manager against it,
	// K8s an administrator's client and Ctx the suite's context.
	Plane   *controlplane.Plane
	Manager *controlplane.Manager
	K8s     client.Client
	Ctx     context.Context
	// Logs holds the manager's output.
	Logs   = &controlplane.LogBuffer{}
	cancel context.CancelFunc
	// root is the repository.
	root string
)

// Run runs a package's specs, with the suites' defaults for Eventually and
// Consistently.
func Run(t *testing.T, description string) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	SetDefaultConsistentlyDuration(time.Second)
	RunSpecs(t, description)
}

// Setup registers a suite's BeforeSuite, which starts the control plane and
// the manager with the flags extra (Start), its AfterSuite, which stops
// them, and the report of the manager's log on a failed spec. A suite
// whose BeforeSuite does more registers its own nodes.
func Setup(extra ...string) bool {
	BeforeSuite(func() { Start(extra...) })
	AfterSuite(Stop)
	ReportAfterEach(ReportManagerLog)
	return true
}

// Start starts the control plane of the repository the suite's working
// directory is in (Root), and the manager built from it with the flags
// extra. Without KUBEBUILDER_ASSETS it skips the suite, or fails it where
// make test asked for envtest.
func Start(extra ...string) {
	controlplane.RequireEnvtest(GinkgoT())
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	Ctx, cancel = context.WithCancel(context.Background())
	var err error
	root, err = Root()
	Expect(err).NotTo(HaveOccurred())
	binary, err := controlplane.BuildManager(Ctx, root, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	Plane, err = controlplane.Start(root)
	Expect(err).NotTo(HaveOccurred())
	K8s = Plane.Client
	Manager, err = Plane.NewManager(binary, Logs, extra...)
	Expect(err).NotTo(HaveOccurred())
	Expect(Manager.Start(Ctx)).To(Succeed())
}

// Root is the repository the working directory is in: the nearest
// directory up from it that holds go.mod. A suite's working directory is
// its package's, at any depth (internal/<package>, test/integration/<suite>).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Stop stops the manager and the control plane.
func Stop() {
	if Manager != nil {
		Expect(Manager.Stop()).To(Succeed())
	}
	if Plane != nil {
		Expect(Plane.Stop()).To(Succeed())
	}
	if cancel != nil {
		cancel()
	}
}

// ReportManagerLog adds the tail of the manager's log to a failed spec's
// report; a suite registers it with ReportAfterEach.
func ReportManagerLog(r SpecReport) {
	if r.Failed() {
		AddReportEntry("manager log (last 20 KB)", Logs.Tail(20<<10))
	}
}

var namespaceCount int

// NewNamespace creates a namespace of the spec's own.
func NewNamespace() string {
	namespaceCount++
	name := fmt.Sprintf("test-%d-%d", GinkgoParallelProcess(), namespaceCount)
	Expect(K8s.Create(Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

// ManagerRSS is the manager process's resident memory, in bytes.
func ManagerRSS() int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", Manager.PID()))
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			Expect(err).NotTo(HaveOccurred())
			return kb << 10
		}
	}
	Fail("no VmRSS in /proc/PID/status")
	return 0
}
