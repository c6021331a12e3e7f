package serving

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// ControlPlane tells the control plane's connections from others'. Nothing
// in a request tells them apart, and the address the API servers call from
// depends on the network (the node's, the pod network's gateway on the
// node, a tunnel's, a network proxy's), so it is proven rather than
// guessed: the manager has each API server send the webhooks a dry-run
// review carrying a token (Token) that only holders of the webhook's
// serving key can make, and the webhook that receives it (Prove) learns
// the address it came from. Connections from an address learned within
// learnedFor, or from the networks given, are the control plane's; so is a
// connection whose request carried a client certificate of the webhook
// server's client CA.
type ControlPlane struct {
	networks []netip.Prefix
	// replica tells this replica's tokens from the others'.
	replica [8]byte

	mu      sync.RWMutex
	key     func() ([]byte, error)
	learned map[netip.Addr]time.Time
	// spent are the nonces of the tokens proven here, each once.
	spent map[[16]byte]time.Time
}

// NewControlPlane is a ControlPlane of the given networks.
func NewControlPlane(networks []netip.Prefix) *ControlPlane {
	c := &ControlPlane{networks: networks, learned: map[netip.Addr]time.Time{}, spent: map[[16]byte]time.Time{}}
	_, _ = rand.Read(c.replica[:])
	return c
}

const (
	// learnedFor is how long a proven address stays the control plane's
	// without another proof: the checks come every 30 s, and an address
	// may pass to another (a network proxy's agent, rescheduled).
	learnedFor = 2 * time.Minute
	// tokenFor is how long a token proves: a dry-run's way from the manager
	// through an API server to the webhooks takes well under it.
	tokenFor = time.Minute
)

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
	at, ok := c.learned[ip]
	return ok && time.Since(at) < learnedFor
}

// Learned is the number of addresses proven within learnedFor.
func (c *ControlPlane) Learned() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, at := range c.learned {
		if time.Since(at) < learnedFor {
			n++
		}
	}
	return n
}

// learn records ip as proven now, and says whether it was not before.
func (c *ControlPlane) learn(ip netip.Addr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for a, at := range c.learned {
		if now.Sub(at) >= learnedFor {
			delete(c.learned, a)
		}
	}
	_, known := c.learned[ip]
	c.learned[ip] = now
	return !known
}

// keyFromCertificate makes the tokens' key the serving certificate's
// private key, which every replica serving the webhooks holds and no
// tenant does.
func (c *ControlPlane) keyFromCertificate(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The key of the last certificate: a review that anyone may send
	// costs a derivation only when the certificate rotates.
	var (
		mu   sync.Mutex
		last *tls.Certificate
		key  []byte
	)
	c.key = func() ([]byte, error) {
		cert, err := get(&tls.ClientHelloInfo{})
		if err != nil {
			return nil, err
		}
		if cert == nil || cert.PrivateKey == nil {
			return nil, errors.New("the webhook serves no certificate yet")
		}
		mu.Lock()
		defer mu.Unlock()
		if cert != last {
			der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256(der)
			last, key = cert, sum[:]
		}
		return key, nil
	}
}

func (c *ControlPlane) mac(payload []byte) ([]byte, error) {
	c.mu.RLock()
	key := c.key
	c.mu.RUnlock()
	if key == nil {
		return nil, errors.New("the webhook server has not started")
	}
	k, err := key()
	if err != nil {
		return nil, fmt.Errorf("the webhook's serving key: %w", err)
	}
	m := hmac.New(sha256.New, k)
	m.Write(payload)
	return m.Sum(nil)[:16], nil
}

// A token is when it was made (8 bytes), the replica that made it (8), a
// nonce (16), and the MAC of those under the serving key (16).
const (
	tokenPayload = 8 + 8 + 16
	tokenBytes   = tokenPayload + 16
)

// Token is a new proof for a review the manager has an API server send,
// to be proven once, within tokenFor, by any replica (Prove).
func (c *ControlPlane) Token() (string, error) {
	return c.tokenAt(time.Now())
}

func (c *ControlPlane) tokenAt(made time.Time) (string, error) {
	payload := make([]byte, tokenPayload)
	binary.BigEndian.PutUint64(payload, uint64(made.Unix()))
	copy(payload[8:16], c.replica[:])
	if _, err := rand.Read(payload[16:]); err != nil {
		return "", err
	}
	sum, err := c.mac(payload)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(append(payload, sum...)), nil
}

// spend says whether token proves, once: made by a replica of the serving
// key within tokenFor, and not spent before here; and whether this replica
// made it.
func (c *ControlPlane) spend(token string) (ok, own bool) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != tokenBytes {
		return false, false
	}
	payload, sum := raw[:tokenPayload], raw[tokenPayload:]
	want, err := c.mac(payload)
	if err != nil || !hmac.Equal(sum, want) {
		return false, false
	}
	made := time.Unix(int64(binary.BigEndian.Uint64(payload)), 0)
	if time.Since(made) >= tokenFor || time.Until(made) >= 10*time.Second {
		return false, false
	}
	nonce := [16]byte(payload[16:])
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for n, at := range c.spent {
		if now.Sub(at) >= tokenFor+10*time.Second {
			delete(c.spent, n)
		}
	}
	if _, spent := c.spent[nonce]; spent {
		return false, false
	}
	c.spent[nonce] = now
	return true, [8]byte(payload[8:16]) == c.replica
}

// ProvenHere says whether this replica's webhooks have proven token, which
// it made: an API server's check that went to another replica proves
// nothing here, and is sent again.
func (c *ControlPlane) ProvenHere(token string) bool {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != tokenBytes {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, spent := c.spent[[16]byte(raw[16:tokenPayload])]
	return spent
}

type proveKey struct{}

// Prove says that the request of ctx carries token: when it proves (spend),
// the request's connection and the address it came from are the control
// plane's from now on, and Prove returns the address and whether it is
// newly learned. A token another replica made is answered with the
// connection closed, so that the API server's next review opens another,
// which may reach that replica. A request served without a ControlPlane
// proves nothing.
func Prove(ctx context.Context, token string) (ip netip.Addr, learned, ok bool) {
	prove, found := ctx.Value(proveKey{}).(func(string) (netip.Addr, bool, bool))
	if !found {
		return netip.Addr{}, false, false
	}
	return prove(token)
}
