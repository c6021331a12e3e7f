package serving

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ControlPlane tells the control plane's connections from others' by the
// address they come from: the networks given (the API servers' own, or
// their network proxy's), and the API servers' addresses found in the
// `kubernetes` Service's EndpointSlice (APIServers). A connection whose
// request came with a client certificate of the webhook server's client CA
// is the control plane's too. Nothing else in a request tells them apart.
type ControlPlane struct {
	networks []netip.Prefix

	mu         sync.RWMutex
	apiServers []netip.Addr
}

// NewControlPlane is a ControlPlane of the given networks.
func NewControlPlane(networks []netip.Prefix) *ControlPlane {
	return &ControlPlane{networks: networks}
}

// Has says whether ip is one of the control plane's; none is of none.
func (c *ControlPlane) Has(ip netip.Addr) bool {
	if c == nil || !ip.IsValid() {
		return false
	}
	for _, n := range c.networks {
		if n.Contains(ip) {
			return true
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Contains(c.apiServers, ip)
}

// setAPIServers replaces the API servers' addresses found, and says
// whether they changed.
func (c *ControlPlane) setAPIServers(ips []netip.Addr) bool {
	slices.SortFunc(ips, func(a, b netip.Addr) int { return a.Compare(b) })
	ips = slices.Compact(ips)
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Equal(c.apiServers, ips) {
		return false
	}
	c.apiServers = ips
	return true
}

// APIServers keeps ControlPlane's API server addresses those of the
// `kubernetes` Service's EndpointSlice in `default`, which the API servers
// write themselves: read every Every, by name, uncached (a watch of every
// EndpointSlice in the cluster would cost more than it tells). It runs on
// every replica: each serves the webhooks.
type APIServers struct {
	Reader       client.Reader
	ControlPlane *ControlPlane
	Every        time.Duration
}

// The EndpointSlice that the API servers keep of their own addresses.
const (
	apiServersNamespace = "default"
	apiServersName      = "kubernetes"
)

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,resourceNames=kubernetes,verbs=get

// Start reads the API servers' addresses until ctx is done. A failed read
// keeps the addresses read before and is logged when it first fails.
func (a *APIServers) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("control-plane")
	failing := false
	for {
		err := a.read(ctx)
		switch {
		case err != nil && !failing:
			logger.Error(err, "read the API servers' addresses: their connections to the webhooks are not told from others' but by --webhook-control-plane-networks or a client certificate")
		case err == nil && failing:
			logger.Info("read the API servers' addresses again")
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(a.Every):
		}
	}
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (a *APIServers) NeedLeaderElection() bool { return false }

func (a *APIServers) read(ctx context.Context) error {
	var slice discoveryv1.EndpointSlice
	err := a.Reader.Get(ctx, client.ObjectKey{Namespace: apiServersNamespace, Name: apiServersName}, &slice)
	if apierrors.IsNotFound(err) {
		slice = discoveryv1.EndpointSlice{}
	} else if err != nil {
		return fmt.Errorf("get EndpointSlice %s/%s: %w", apiServersNamespace, apiServersName, err)
	}
	var ips []netip.Addr
	for _, e := range slice.Endpoints {
		for _, s := range e.Addresses {
			if ip, err := netip.ParseAddr(s); err == nil {
				ips = append(ips, ip.Unmap())
			}
		}
	}
	if a.ControlPlane.setAPIServers(ips) {
		log.FromContext(ctx).WithName("control-plane").Info("the API servers' addresses", "addresses", ips)
	}
	return nil
}
