package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/serving"
)

// ControlPlaneCheckAnnotation carries the token of a control plane check
// (ControlPlaneChecks) on a dry-run Persona.
const ControlPlaneCheckAnnotation = "prompts.persona-operator.dev/control-plane-check"

// ControlPlaneChecks has the API servers prove to the webhooks the address
// they call from (serving.ControlPlane): every Every, a dry-run create of a
// Persona carrying a token, through each API server of the `kubernetes`
// Service's EndpointSlice in default (through the configured host when it
// lists none or cannot be read). The API server sends the review to a
// replica of the webhooks, which learns the address it came from. It runs on
// every replica: each mints tokens the others can check, with the serving
// key they share.
type ControlPlaneChecks struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
	// Reader reads the EndpointSlice, uncached (a watch of every
	// EndpointSlice in the cluster would cost more than it tells).
	Reader       client.Reader
	Namespace    string
	ControlPlane *serving.ControlPlane
	Every        time.Duration

	clients map[string]client.Client
}

// The EndpointSlice that the API servers keep of their own addresses, and
// the most API servers checked.
const (
	apiServersNamespace = "default"
	apiServersName      = "kubernetes"
	maxAPIServers       = 8
)

// controlPlaneCheckName names the dry-run Persona of the checks, and
// retryAfter is how soon a failed check is sent again first: one proven by
// another replica, too.
const (
	controlPlaneCheckName = "control-plane-check"
	retryAfter            = 2 * time.Second
	// failingFor is how long checks fail before the log says so.
	failingFor = time.Minute
)

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,resourceNames=kubernetes,verbs=get

// Start checks until ctx is done: as soon as the webhooks serve, every
// Every after a check that passed, and sooner (from retryAfter, doubling)
// after one that failed, as while no replica is ready yet.
func (c *ControlPlaneChecks) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("control-plane")
	registerControlPlaneMetrics.Do(func() {
		metrics.Registry.MustRegister(controlPlaneChecksSent, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "persona_webhook_control_plane_addresses",
			Help: "Addresses this replica's webhooks know as the control plane's, proven by a check within the last 2 minutes; 0 while none is, when a tenant's pods that reach the webhook port can compete with the API servers for its connections.",
		}, func() float64 { return float64(c.ControlPlane.Learned()) }))
	})
	c.clients = map[string]client.Client{}
	wait, retry := time.Duration(0), retryAfter
	var failingSince time.Time
	told := false // that the checks fail
	// pending are the API servers whose checks have not been proven here
	// yet this round: only those are sent again.
	var pending []string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if _, err := c.ControlPlane.Token(); err != nil {
			wait = 200 * time.Millisecond // the webhook server has not started
			continue
		}
		if len(pending) == 0 {
			pending = c.apiServers(ctx)
		}
		var err error
		pending, err = c.check(ctx, pending)
		if wait = c.Every; err != nil {
			wait, retry = retry, min(2*retry, c.Every)
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
		} else {
			retry, failingSince = retryAfter, time.Time{}
		}
		// A replica's first checks may go to another replica: only
		// failing for a while is told.
		switch failing := err != nil && time.Since(failingSince) >= failingFor; {
		case failing && !told:
			logger.Error(err, "check the API servers' addresses: until one is proven here, this replica's webhooks do not tell the API servers' connections from others' (docs/install.md#control-plane)")
			told = true
		case err == nil && told:
			logger.Info("the API servers' checks pass again")
			told = false
		}
	}
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (c *ControlPlaneChecks) NeedLeaderElection() bool { return false }

// check sends one dry-run through each API server of hosts, and returns
// those whose checks were not proven here. One that cannot be reached at
// its address (a cluster may advertise one that pods cannot dial) is
// replaced by one check through the configured host.
func (c *ControlPlaneChecks) check(ctx context.Context, hosts []string) (failed []string, err error) {
	var errs []error
	var unreached []string
	for _, host := range hosts {
		err := c.checkThrough(ctx, host)
		var status apierrors.APIStatus
		switch {
		case err == nil:
		case host != "" && !errors.As(err, &status) && !errors.Is(err, errElsewhere):
			unreached = append(unreached, host)
		default:
			errs = append(errs, err)
			failed = append(failed, host)
		}
	}
	if len(unreached) > 0 {
		if err := c.checkThrough(ctx, ""); err != nil {
			errs = append(errs, err)
			failed = append(failed, unreached...)
		}
	}
	return failed, errors.Join(errs...)
}

// apiServers are the hosts of the API servers: the EndpointSlice's
// addresses, or the configured host ("") when it has none.
func (c *ControlPlaneChecks) apiServers(ctx context.Context) []string {
	var slice discoveryv1.EndpointSlice
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: apiServersNamespace, Name: apiServersName}, &slice); err != nil || len(slice.Ports) == 0 || slice.Ports[0].Port == nil {
		return []string{""}
	}
	port := strconv.Itoa(int(*slice.Ports[0].Port))
	var hosts []string
	for _, e := range slice.Endpoints {
		for _, a := range e.Addresses {
			if len(hosts) < maxAPIServers {
				hosts = append(hosts, net.JoinHostPort(a, port))
			}
		}
	}
	if len(hosts) == 0 {
		return []string{""}
	}
	return hosts
}

var registerControlPlaneMetrics sync.Once

// controlPlaneChecksSent counts the checks' dry-run creates: client-go
// counts them among the manager's POSTs, though they store nothing.
var controlPlaneChecksSent = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "persona_webhook_control_plane_checks_total",
	Help: "Dry-run creates this replica sent through the API servers to have them prove the address they call the webhooks from; client-go's rest_client_requests_total counts them among the POSTs, though they store nothing.",
})

// checkThrough sends a dry-run through the API server at host.
func (c *ControlPlaneChecks) checkThrough(ctx context.Context, host string) error {
	cl, err := c.client(host)
	if err != nil {
		return err
	}
	token, err := c.ControlPlane.Token()
	if err != nil {
		return err
	}
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: controlPlaneCheckName,
		Annotations: map[string]string{ControlPlaneCheckAnnotation: token}}}
	controlPlaneChecksSent.Inc()
	err = cl.Create(ctx, p, client.DryRunAll)
	if host == "" {
		host = c.Config.Host
	}
	switch {
	case c.ControlPlane.ProvenHere(token):
		// Whatever refused the create after (a quota, a policy), the
		// webhook here proved it.
		return nil
	case err != nil:
		return fmt.Errorf("a dry-run through the API server at %s: %w", host, err)
	case !c.ControlPlane.ProvenHere(token):
		// Another replica proved it, and closed the API server's
		// connection, so that the next check may come here.
		return fmt.Errorf("the check through the API server at %s went to another replica of the webhooks: %w", host, errElsewhere)
	}
	return nil
}

// errElsewhere is a check another replica proved.
var errElsewhere = errors.New("not proven here yet")

// client is a client of the API server at host ("": the configured one),
// which its certificate names as the configured host: the Service's address
// in a cluster.
func (c *ControlPlaneChecks) client(host string) (client.Client, error) {
	if cl, ok := c.clients[host]; ok {
		return cl, nil
	}
	cfg := rest.CopyConfig(c.Config)
	if host != "" {
		configured, err := url.Parse(c.Config.Host)
		if err != nil {
			return nil, fmt.Errorf("the API server's address %q: %w", c.Config.Host, err)
		}
		if cfg.ServerName == "" {
			cfg.ServerName = configured.Hostname()
		}
		cfg.Host = "https://" + host
	}
	cl, err := client.New(cfg, client.Options{Scheme: c.Scheme, Mapper: c.Mapper})
	if err != nil {
		return nil, fmt.Errorf("a client of the API server at %s: %w", cfg.Host, err)
	}
	c.clients[host] = cl
	return cl, nil
}
