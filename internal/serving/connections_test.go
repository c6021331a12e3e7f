package serving

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// The connection bounds are one pool for every client, and a tenant with
// pods has as many addresses as pods: an idle kept-alive connection holds
// its place at no cost. These tests hold every place from four addresses
// and check that a new client of another address still gets in.

// attackerAddrs are the four pods' addresses: loopback aliases, which Linux
// routes to lo without configuration.
var attackerAddrs = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}

// holdSlots opens perAddr connections from each address to addr, sends one
// complete request on each (tls when set), reads the answer and leaves the
// connection idle and kept alive. It returns the connections, and renew,
// which sends one more request on each (as an attacker does every < 90 s).
func holdSlots(t *testing.T, addr string, useTLS bool, perAddr int, path string) (held []net.Conn, renew func() int) {
	t.Helper()
	var mu sync.Mutex
	readers := map[net.Conn]*bufio.Reader{}
	request := func(c net.Conn, r *bufio.Reader) error {
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
			return err
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		_ = c.SetDeadline(time.Time{})
		return nil
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, a := range attackerAddrs {
		for range perAddr {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(a)}, Timeout: 10 * time.Second}
				var c net.Conn
				var err error
				if useTLS {
					c, err = tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the attacker's client
				} else {
					c, err = d.Dial("tcp", addr)
				}
				if err != nil {
					return
				}
				r := bufio.NewReader(c)
				if err := request(c, r); err != nil {
					_ = c.Close()
					return
				}
				mu.Lock()
				readers[c] = r
				held = append(held, c)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range held {
			_ = c.Close()
		}
	})
	renew = func() int {
		var ok atomic.Int64
		var wg sync.WaitGroup
		for _, c := range held {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if request(c, readers[c]) == nil {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		return int(ok.Load())
	}
	return held, renew
}

// probe is a kubelet's HTTP probe: a new connection, 1 s (the default
// timeoutSeconds), no keep-alive.
func probe(url string) error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a probe
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// The probe server (cmd/servers.go addProbes: plain HTTP, DefaultLimits):
// four addresses hold every place with idle kept-alive connections; the
// kubelet's probe, a new connection with a 1 s timeout, still gets in,
// taking the place of the largest holder's oldest connection.
func TestFourAddressesHoldingEveryPlaceKeepNoProbeOut(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	ln, err := Listen(ctx, "127.0.0.1:0", nil, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(ctx, mux, DefaultLimits)
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	url := "http://" + ln.Addr().String() + "/healthz"
	held, _ := holdSlots(t, ln.Addr().String(), false, DefaultLimits.MaxConnectionsPerAddress, "/healthz")
	if len(held) != DefaultLimits.MaxConnections {
		t.Fatalf("four addresses hold %d connections, want every one of the %d places", len(held), DefaultLimits.MaxConnections)
	}
	for i := range 3 {
		if err := probe(url); err != nil {
			t.Errorf("probe %d while four addresses hold every place: %v", i+1, err)
		}
	}
}

// The webhook server (serving.WebhookServer, TLS): the same four addresses.
// A new connection of the API server gets in within a review's timeout, and
// so does the readiness check "webhook", which dials the server itself,
// within the kubelet's 1 s probe.
func TestFourAddressesHoldingEveryPlaceKeepNoReviewOut(t *testing.T) {
	addr := startWebhook(t, DefaultLimits)
	held, _ := holdSlots(t, addr, true, DefaultLimits.MaxConnectionsPerAddress, hookPath)
	t.Logf("%d pods x %d TLS connections: %d held", len(attackerAddrs), DefaultLimits.MaxConnectionsPerAddress, len(held))
	time.Sleep(6 * time.Second) // past ReadHeaderTimeout (5 s)

	// The API server: a new connection, a review, its 5 s timeout.
	apiserver := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a test's own server
		DialContext:     (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}}).DialContext}}
	start := time.Now()
	resp, reviewErr := apiserver.Post("https://"+addr+hookPath, "application/json", strings.NewReader(`{}`))
	if reviewErr == nil {
		_ = resp.Body.Close()
	}
	took := time.Since(start)
	// The readiness check the kubelet's probe runs, under its 1 s.
	checkDone := make(chan error, 1)
	start = time.Now()
	go func() {
		s := &WebhookServer{options: webhookOptionsOf(addr), started: true}
		checkDone <- s.StartedChecker()(nil)
	}()
	var checkErr error
	select {
	case checkErr = <-checkDone:
	case <-time.After(time.Second):
		checkErr = fmt.Errorf("no answer within the probe's 1 s")
	}
	t.Logf("a review from the API server's address: err %v after %v; readiness check \"webhook\": %v after %v", reviewErr, took.Round(time.Millisecond), checkErr, time.Since(start).Round(time.Millisecond))
	if reviewErr != nil || checkErr != nil {
		t.Errorf("with four addresses holding %d idle TLS connections, the API server's review: %v; the readiness check: %v; want both answered", len(held), reviewErr, checkErr)
	}
}

func webhookOptionsOf(addr string) webhook.Options {
	host, port, _ := net.SplitHostPort(addr)
	var p int
	_, _ = fmt.Sscan(port, &p)
	return webhook.Options{Host: host, Port: p}
}
