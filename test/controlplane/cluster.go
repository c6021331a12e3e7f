package controlplane

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ServiceSubnet is the range of Services' ClusterIPs, envtest's, and
// KubernetesServiceIP the kubernetes Service's, its first.
const (
	ServiceSubnet       = "10.0.0.0/24"
	KubernetesServiceIP = "10.0.0.1"
)

// Cluster is what a cluster's control plane has beyond envtest's: the files
// the controller-manager signs ServiceAccount tokens and publishes the CA
// with.
type Cluster struct {
	// CAFile is the CA of the API server's serving certificate, which pods
	// get as kube-root-ca.crt.
	CAFile string
	// ServiceAccountKeyFile signs ServiceAccount tokens.
	ServiceAccountKeyFile string
}

// StartCluster starts kube-apiserver and etcd as a cluster runs them, for
// the operator's own install: no CRDs or webhook configuration installed,
// the ServiceAccount admission plugin on, serving on address (advertised as
// the kubernetes Service's endpoint) with a certificate valid for the
// Service's names and ClusterIP, so that pods reach it with their own
// tokens. address must be one pods can route to.
func StartCluster(address string) (*Plane, *Cluster, error) {
	dir, err := os.MkdirTemp("", "persona-apiserver-")
	if err != nil {
		return nil, nil, err
	}
	cluster, ca, err := writeClusterCerts(dir, address)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	port, err := FreePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	api := &envtest.APIServer{CertDir: dir}
	// Both, or envtest picks a port on 127.0.0.1.
	api.Address, api.Port = address, strconv.Itoa(port)
	api.CA = ca
	api.Configure().
		Disable("disable-admission-plugins").
		Set("advertise-address", address).
		Set("service-account-key-file", cluster.ServiceAccountKeyFile).
		Set("service-account-signing-key-file", cluster.ServiceAccountKeyFile)
	env := &envtest.Environment{}
	env.ControlPlane.APIServer = api
	if err := chooseWebhookPort(env); err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("start the control plane (is KUBEBUILDER_ASSETS set? run hack/envtest-binaries.sh): %w", err)
	}
	p := &Plane{Env: env, Config: cfg, extraDirs: []string{dir}}
	if p.Client, err = client.New(cfg, client.Options{Scheme: Scheme}); err != nil {
		_ = p.Stop()
		return nil, nil, fmt.Errorf("client: %w", err)
	}
	if err := p.writeAdminKubeconfig(); err != nil {
		_ = p.Stop()
		return nil, nil, err
	}
	return p, cluster, nil
}

// writeClusterCerts writes into dir what envtest would (its API server
// skips making certificates when apiserver.crt exists): a serving
// certificate for the kubernetes Service and address, and a ServiceAccount
// signing key. It returns the serving certificate's CA.
func writeClusterCerts(dir, address string) (*Cluster, []byte, error) {
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(KubernetesServiceIP), net.ParseIP(address)}
	names := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(address, ips, names)
	if err != nil {
		return nil, nil, fmt.Errorf("serving certificate: %w", err)
	}
	// The serving certificate comes first, then the CA that signed it.
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil || len(certs) < 2 {
		return nil, nil, fmt.Errorf("serving certificate: %d certificates (%v), want it and its CA", len(certs), err)
	}
	ca, err := cert.EncodeCertificates(certs[len(certs)-1])
	if err != nil {
		return nil, nil, err
	}
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, nil, fmt.Errorf("ServiceAccount signing key: %w", err)
	}
	c := &Cluster{CAFile: filepath.Join(dir, "serving-ca.crt"), ServiceAccountKeyFile: filepath.Join(dir, "sa-signer.key")}
	for name, data := range map[string][]byte{
		"apiserver.crt": certPEM, "apiserver.key": keyPEM, "serving-ca.crt": ca,
		"sa-signer.key": saKey, "sa-signer.crt": saKey,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, nil, err
		}
	}
	return c, ca, nil
}
