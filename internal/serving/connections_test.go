package serving

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// holdSlots opens perAddr connections from each address of from to addr, sends one
// complete request on each (tls when set), reads the answer and leaves the
// connection idle and kept alive. It returns the connections, and renew,
// which sends one more request on each (as an attacker does within every
// idle timeout).
func holdSlots(t *testing.T, addr string, useTLS bool, from []string, perAddr int, path string) (held []net.Conn, renew func() int) {
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
	for _, a := range from {
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
// taking the place of the connection idle longest.
func TestFourAddressesHoldingEveryPlaceKeepNoProbeOut(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	ln, err := Listen(ctx, "127.0.0.1:0", nil, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(ctx, ln, mux, DefaultLimits)
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	url := "http://" + ln.Addr().String() + "/healthz"
	held, _ := holdSlots(t, ln.Addr().String(), false, attackerAddrs, DefaultLimits.MaxConnectionsPerAddress, "/healthz")
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
	held, _ := holdSlots(t, addr, true, attackerAddrs, DefaultLimits.MaxConnectionsPerAddress, hookPath)
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

// podAddrs are n pods' addresses: loopback aliases from 127.0.first.1.
func podAddrs(first, n int) []string {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.%d.%d", first+i/200, 1+i%200)
	}
	return addrs
}

// startReviewServer serves /healthz and /review, a review of 50 ms, within
// DefaultLimits, and returns its address.
func startReviewServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/review", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(50 * time.Millisecond)
		_, _ = io.WriteString(w, `{"response":{"allowed":true}}`)
	})
	ln, err := Listen(t.Context(), "127.0.0.1:0", nil, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(t.Context(), ln, mux, DefaultLimits)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// reviewLoad is the API server: one address (127.0.0.9), conc reviews at
// once for d, with client-go's keep-alive pool (25 idle a host), no retry.
func reviewLoad(target string, conc int, d time.Duration) (answered, failed int64, firstErr error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 25, MaxIdleConns: 100,
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}}).DialContext}
	defer tr.CloseIdleConnections()
	c := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	var ok, bad atomic.Int64
	var once sync.Once
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				resp, err := c.Post("http://"+target+"/review", "application/json", strings.NewReader(`{"kind":"AdmissionReview"}`))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					bad.Add(1)
					once.Do(func() { firstErr = err })
					time.Sleep(10 * time.Millisecond)
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	return ok.Load(), bad.Load(), firstErr
}

// Places are not shared by address: 64 pods holding 16 idle kept-alive
// connections each, every place, keep out none of the API server's 32
// reviews at once (with an equal share by address, it kept 15 places and
// most reviews failed).
func TestManyPodsHoldingEveryPlaceKeepNoReviewOut(t *testing.T) {
	target := startReviewServer(t)
	pods := podAddrs(10, 64)
	held, _ := holdSlots(t, target, false, pods, DefaultLimits.MaxConnections/len(pods), "/healthz")
	if len(held) != DefaultLimits.MaxConnections {
		t.Fatalf("%d pods hold %d connections, want every one of the %d places", len(pods), len(held), DefaultLimits.MaxConnections)
	}
	answered, failed, firstErr := reviewLoad(target, 32, 5*time.Second)
	t.Logf("%d pods hold %d idle connections; the API server, 32 reviews at once for 5 s: %d answered, %d failed (first: %v)", len(pods), len(held), answered, failed, firstErr)
	if failed > 0 || answered == 0 {
		t.Errorf("%d of %d reviews failed while %d pods held every place, want none", failed, answered+failed, len(pods))
	}
}

// A review in flight is never cut for a new connection: 41 pods hold 24
// idle connections each and another 8, and four more pods dial on in a
// loop, so that the API server's 32 connections are the largest holding;
// its reviews still all succeed.
func TestDialsAtTheBoundCutNoReviewInFlight(t *testing.T) {
	target := startReviewServer(t)
	held, _ := holdSlots(t, target, false, podAddrs(20, 41), 24, "/healthz")
	more, _ := holdSlots(t, target, false, []string{"127.0.31.1"}, 8, "/healthz")
	t.Logf("%d idle connections held", len(held)+len(more))
	stop := make(chan struct{})
	var dials atomic.Int64
	var wg sync.WaitGroup
	for _, a := range podAddrs(30, 4) {
		wg.Go(func() {
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(a)}, Timeout: time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c, err := d.Dial("tcp", target); err == nil {
					dials.Add(1)
					time.Sleep(2 * time.Millisecond)
					_ = c.Close()
				}
			}
		})
	}
	answered, failed, firstErr := reviewLoad(target, 32, 5*time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d dials of 4 more pods meanwhile; the API server, 32 reviews at once for 5 s: %d answered, %d failed (first: %v)", dials.Load(), answered, failed, firstErr)
	if failed > 0 || answered == 0 {
		t.Errorf("%d of %d reviews failed while pods dialled at the bound, want none", failed, answered+failed)
	}
}

// At the bound, a connection whose request has arrived whole and is being
// answered keeps its place; one sending its body slowly, or idle, does not;
// with every place answering, a new connection is closed.
func TestARequestBeingAnsweredKeepsItsPlace(t *testing.T) {
	limits := DefaultLimits
	limits.MaxConnections = 2
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-release
		_, _ = io.WriteString(w, "answered")
	})
	ln, err := Listen(t.Context(), "127.0.0.1:0", nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(t.Context(), ln, mux, limits)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()
	waitAccepted := func() { time.Sleep(100 * time.Millisecond) }

	answered := plainDial(t, addr) // the oldest: a request being answered
	if _, err := io.WriteString(answered, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
		t.Fatal(err)
	}
	waitAccepted()
	trickling := plainDial(t, addr) // its body not arrived yet
	if _, err := io.WriteString(trickling, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	waitAccepted()
	idle := plainDial(t, addr) // takes the trickling one's place
	if !closedByPeer(trickling, 2*time.Second) {
		t.Fatal("a connection sending its body was kept at the total while another answered a request, want it closed for the new one")
	}
	waitAccepted()
	second := plainDial(t, addr) // takes the idle one's place
	if !closedByPeer(idle, 2*time.Second) {
		t.Fatal("an idle connection was kept at the total, want it closed for the new one")
	}
	if _, err := io.WriteString(second, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	waitAccepted()
	refused := plainDial(t, addr) // every place answers
	if !closedByPeer(refused, 2*time.Second) {
		t.Fatal("a new connection was kept with every place answering a request, want it closed")
	}
	close(release)
	for name, c := range map[string]net.Conn{"the first": answered, "the second": second} {
		if got := statusOf(c, 2*time.Second); got != "HTTP/1.1 200 OK" {
			t.Errorf("%s request being answered at the total: %q, want HTTP/1.1 200 OK", name, got)
		}
	}
}

// A request is being answered until the server has written its answer out: net/http
// sends what the handler left in its buffer after the handler returns, and
// a place taken in between would close the connection before the answer
// (the API server reads EOF). Once the connection is idle, or an answer is
// left unread past slowAfter, the place may be taken.
func TestAnAnswerNotYetWrittenOutKeepsItsPlace(t *testing.T) {
	l := bound(nil, Limits{MaxConnections: 1})
	p := &place{address: "127.0.0.1", since: time.Now()}
	l.places[p] = struct{}{}
	handler := l.answering(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "answered")
	}))
	r := httptest.NewRequestWithContext(context.WithValue(t.Context(), placeKey{}, p), http.MethodPost, "/mutate", strings.NewReader("{}"))
	handler.ServeHTTP(httptest.NewRecorder(), r)
	victimFor := func() *place {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.victimFor()
	}
	if victimFor() != nil {
		t.Fatal("a connection whose answer the server has not written out was taken for a new one, want it kept")
	}
	l.mu.Lock()
	p.returned = time.Now().Add(-slowAfter)
	l.mu.Unlock()
	if victimFor() != p {
		t.Errorf("a connection whose answer was left unwritten for %v was kept, want it taken", slowAfter)
	}
	l.mu.Lock()
	p.returned = time.Now()
	l.mu.Unlock()
	l.connState(p, http.StateActive)
	if victimFor() != nil {
		t.Fatal("a connection that only became active was taken, want it kept until its answer is written out")
	}
	l.connState(p, http.StateIdle)
	if victimFor() != p {
		t.Errorf("an idle connection whose answer was written out was kept at the total, want it taken for a new one")
	}
}
