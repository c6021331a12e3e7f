// Package controlplane runs a local control plane (kube-apiserver and etcd
// through envtest) with the operator's CRDs and webhook configuration
// installed, and the manager binary against it. The integration tests,
// `make demo` and `make scale` share it.
package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// Scheme knows the core types and the operator's.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}()

// Plane is a running control plane.
type Plane struct {
	Env *envtest.Environment
	// Config is an administrator's client config.
	Config *rest.Config
	Client client.Client
	// Dir holds the kubeconfig files.
	Dir string
	// AdminKubeconfig is a kubeconfig file for kubectl.
	AdminKubeconfig string
	// root is the repository, for config/.
	root string
	// extraDirs are removed with the plane.
	extraDirs []string
}

// etcdQuotaBytes is etcd's quota of database file.
const etcdQuotaBytes = 8 << 30

// Start starts kube-apiserver and etcd from KUBEBUILDER_ASSETS (see
// hack/envtest-binaries.sh) with the CRDs and the webhook configuration of
// the repository at root. The webhook points at a local port the manager
// serves, with a certificate envtest makes. Each configure may set the
// API server's flags (e.g. WithAuditLog) before it starts.
func Start(root string, configure ...func(*envtest.Environment)) (*Plane, error) {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook", "manifests.yaml")},
		},
	}
	// etcd's default quota, 2 GiB of database file, which compaction does
	// not shrink, fills in the scale harness's second round at N = 8,000
	// (each writes about 1.7 GiB of revisions, floors included); 8 GiB is
	// the largest etcd recommends.
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.Itoa(etcdQuotaBytes))
	if err := chooseWebhookPort(env); err != nil {
		return nil, err
	}
	for _, c := range configure {
		c(env)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start the control plane (is KUBEBUILDER_ASSETS set? run hack/envtest-binaries.sh): %w", err)
	}
	p := &Plane{Env: env, Config: cfg, root: root}
	fail := func(err error) (*Plane, error) {
		_ = p.Stop()
		return nil, err
	}
	if p.Client, err = client.New(cfg, client.Options{Scheme: Scheme}); err != nil {
		return fail(fmt.Errorf("client: %w", err))
	}
	if err := p.writeAdminKubeconfig(); err != nil {
		return fail(err)
	}
	return p, nil
}

// chooseWebhookPort sets the address the manager's webhook serves on, whose
// port envtest would otherwise take from the kernel's ephemeral range, where
// a connection may hold it by the time the manager binds (see FreePort).
func chooseWebhookPort(env *envtest.Environment) error {
	port, err := FreePort()
	if err != nil {
		return fmt.Errorf("webhook port: %w", err)
	}
	env.WebhookInstallOptions.LocalServingHost = "127.0.0.1"
	env.WebhookInstallOptions.LocalServingPort = port
	return nil
}

// writeAdminKubeconfig makes Dir and an administrator's kubeconfig in it.
func (p *Plane) writeAdminKubeconfig() error {
	var err error
	if p.Dir, err = os.MkdirTemp("", "persona-controlplane-"); err != nil {
		return err
	}
	p.AdminKubeconfig, err = p.Kubeconfig("admin", "system:masters")
	return err
}

// Kubeconfig writes into Dir a kubeconfig of a new user name in groups, who
// has the rights RBAC gives them, and returns its path.
func (p *Plane) Kubeconfig(name string, groups ...string) (string, error) {
	user, err := p.Env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("add user %s: %w", name, err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("kubeconfig of %s: %w", name, err)
	}
	path := filepath.Join(p.Dir, name+".kubeconfig")
	return path, os.WriteFile(path, raw, 0o600)
}

// Stop stops the control plane and removes its files.
func (p *Plane) Stop() error {
	err := p.Env.Stop()
	for _, dir := range append([]string{p.Dir}, p.extraDirs...) {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	return err
}
