package controlplane

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// StartEmpty starts kube-apiserver and etcd from KUBEBUILDER_ASSETS with
// nothing installed, for tests that install a bundle themselves. Its
// WebhookInstallOptions hold a local serving certificate, CA and port only.
// Each configure may set the API server's flags (env.ControlPlane.APIServer)
// before it starts.
func StartEmpty(configure ...func(*envtest.Environment)) (*Plane, error) {
	env := &envtest.Environment{}
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
	p := &Plane{Env: env, Config: cfg}
	if p.Client, err = client.New(cfg, client.Options{Scheme: Scheme}); err != nil {
		_ = p.Stop()
		return nil, fmt.Errorf("client: %w", err)
	}
	if p.Dir, err = os.MkdirTemp("", "persona-controlplane-"); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// Impersonating is the administrator's config acting as user in groups, so
// that only the rights RBAC gives user apply.
func (p *Plane) Impersonating(user string, groups ...string) *rest.Config {
	cfg := rest.CopyConfig(p.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return cfg
}

// NewManagerAs prepares the manager binary to run against p as user in
// groups (the administrator impersonating them), granting nothing: it has
// the rights that what is installed gives user.
func (p *Plane) NewManagerAs(binary string, log io.Writer, user string, groups []string, extra ...string) (*Manager, error) {
	cfg := p.Config
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kubeconfig.AuthInfos["impersonated"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
		Impersonate: user, ImpersonateGroups: groups,
	}
	kubeconfig.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "impersonated"}
	kubeconfig.CurrentContext = "envtest"
	path := filepath.Join(p.Dir, "impersonated.kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		return nil, fmt.Errorf("write the kubeconfig of %s: %w", user, err)
	}
	return &Manager{Binary: binary, Kubeconfig: path, plane: p, Log: log, Extra: extra}, nil
}
