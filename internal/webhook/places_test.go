package webhook

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/persona-operator/persona-operator/internal/serving"
)

// A request that waits for its lane holds a place of the connection bound
// that a newcomer may take (serving.Waiting): a few tenant addresses that
// keep the pod lane busy, and many connections of others whose small
// reviews wait their turn, every place, keep neither the API server's new
// connections nor the readiness check's self-dial out. The bound is scaled
// down to placesBound, with more place holders than places: those evicted
// dial again at once, as fast as the server accepts.
const placesBound, placeHolders = 256, 280

// laneFillingReview is a labelled pod review of 128 containers with long
// names (a patch of ~47 KB) padded with annotations so that its tokens
// weigh nearly all of the pod light lane (16 MiB) in under 64 KiB
// (its patch, its answer, is about 64 KB).
func laneFillingReview(uid string) []byte {
	var cs []string
	for i := 0; i < 128; i++ {
		cs = append(cs, fmt.Sprintf(`{"name":"c%03d%s","image":"busybox"}`, i, strings.Repeat("x", 59)))
	}
	body := podReview(uid, strings.Join(cs, ","), 0)
	var pad strings.Builder
	for i := 0; ; i++ {
		n := int64(len(body) + pad.Len() + 12)
		toks := jsonTokens(body) + 2*int64(i+1)
		if n > lightRequestBytes-64 || podBytesWeight*n+podTokenWeight*toks > PodInflightBytes {
			break
		}
		fmt.Fprintf(&pad, `"a%05d":"",`, i)
	}
	return bytes.Replace(body, []byte(`"annotations":{`), []byte(`"annotations":{`+pad.String()), 1)
}

// loopReviews sends body on one kept-alive HTTP/1.1 connection from local
// (over TLS when useTLS), again as soon as each answer is read, redialling
// when closed.
func loopReviews(addr, local string, useTLS bool, body []byte, stop <-chan struct{}) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: time.Second}
	for {
		select {
		case <-stop:
			return
		default:
		}
		var c net.Conn
		var err error
		if useTLS {
			c, err = tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // a test's own server
		} else {
			c, err = d.Dial("tcp", addr)
		}
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		br := bufio.NewReader(c)
		for {
			select {
			case <-stop:
				c.Close()
				return
			default:
			}
			fmt.Fprintf(c, "POST %s?timeout=10s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", InjectPath, len(body))
			_, _ = c.Write(body)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.Close {
				break
			}
		}
		c.Close()
	}
}

// Four tenant addresses keep the pod light lane busy with lane-filling
// reviews (each a turn of about 25 ms, read at once), and placeHolders
// connections of four others resend small reviews that wait their address's turn (up
// to 5 s, then denied): every place but the newcomer's. The API server's
// reviews, each on a new connection, are all injected.
func TestReviewsWaitingForTheLaneKeepNoReviewOut(t *testing.T) {
	limits := serving.DefaultLimits
	limits.MaxConnections, limits.MaxConnectionsPerAddress = placesBound, 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := serving.Listen(ctx, "127.0.0.1:0", nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	hs := serving.NewHTTPServer(ctx, ln, (&Injector{Personas: failing{}, ConfigMaps: failing{}}).Handler(), limits)
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	addr := ln.Addr().String()
	heavy, small := laneFillingReview("heavy"), podReview("small", agentContainer, 10)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	holders := 4
	for i := 0; i < holders; i++ { // lane holders
		wg.Add(1)
		go func() { defer wg.Done(); loopReviews(addr, fmt.Sprintf("127.0.0.%d", 2+i), false, heavy, stop) }()
	}
	time.Sleep(200 * time.Millisecond)
	for i := 0; i < placeHolders; i++ { // place holders: small reviews waiting their address' turn
		wg.Add(1)
		go func() { defer wg.Done(); loopReviews(addr, fmt.Sprintf("127.0.0.%d", 20+i%4), false, small, stop) }()
	}
	time.Sleep(time.Second)
	failed, total := 0, 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		total++
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 12 * time.Second}
		start := time.Now()
		resp, err := c.Post("http://"+addr+InjectPath+"?timeout=10s", "application/json", bytes.NewReader(podReview("apiserver", agentContainer, 100)))
		if err != nil {
			failed++
			t.Logf("API server: %v after %v", err, time.Since(start).Round(time.Millisecond))
			time.Sleep(250 * time.Millisecond)
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"allowed":true`) {
			failed++
			t.Logf("API server: %s after %v: %.120s", resp.Status, time.Since(start).Round(time.Millisecond), raw)
		}
		time.Sleep(250 * time.Millisecond)
	}
	close(stop)
	cancel()
	hs.Close()
	wg.Wait()
	t.Logf("the API server's reviews on new connections: %d of %d failed", failed, total)
	if failed > 0 {
		t.Errorf("tenant reviews waiting for the lane held every place: %d of %d of the API server's reviews failed", failed, total)
	}
}

// The same, against the shipped webhook server (serving.WebhookServer,
// TLS): its readiness check, StartedChecker's self-dial, always finds a
// place (were it kept out, the kubelet would take the manager out of the
// webhook Service's endpoints).
func TestReviewsWaitingForTheLaneKeepTheReadinessCheckIn(t *testing.T) {
	dir := t.TempDir()
	cert, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(dir+"/tls.crt", cert, 0o600)
	_ = os.WriteFile(dir+"/tls.key", key, 0o600)
	probe, _ := net.Listen("tcp", "127.0.0.1:0")
	port := probe.Addr().(*net.TCPAddr).Port
	probe.Close()
	limits := serving.DefaultLimits
	limits.MaxConnections, limits.MaxConnectionsPerAddress = placesBound, 0
	srv := serving.NewWebhookServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}, limits)
	srv.Register(InjectPath, (&Injector{Personas: failing{}, ConfigMaps: failing{}}).Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Start(ctx) }()
	defer func() { cancel(); <-done }()
	check := srv.StartedChecker()
	for i := 0; check(nil) != nil && i < 50; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if err := check(nil); err != nil {
		t.Fatalf("not ready before the attack: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	heavy, small := laneFillingReview("heavy"), podReview("small", agentContainer, 10)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); loopReviews(addr, fmt.Sprintf("127.0.0.%d", 2+i), true, heavy, stop) }()
	}
	time.Sleep(200 * time.Millisecond)
	for i := 0; i < placeHolders; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); loopReviews(addr, fmt.Sprintf("127.0.0.%d", 20+i%4), true, small, stop) }()
	}
	time.Sleep(time.Second)
	failed, total := 0, 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		total++
		if err := check(nil); err != nil {
			failed++
			if failed == 1 {
				t.Logf("readiness: %v", err)
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("readiness self-dials during the attack: %d of %d failed", failed, total)
	if failed > 0 {
		t.Errorf("the webhook server's readiness check failed %d of %d times while tenant reviews waited for the lane", failed, total)
	}
}

// freshHolder holds one kept-alive HTTP/1.1 connection from local and sends
// request every `every` (a GET for a path no handler serves when empty: the
// mux's 404, no lane), so its place is never idle long. Redials `redial`
// after its connection is closed (evicted).
func freshHolder(addr, local, request string, every, redial time.Duration, stop <-chan struct{}, dials *atomic.Int64) {
	if request == "" {
		request = "GET /nothing HTTP/1.1\r\nHost: webhook\r\n\r\n"
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: time.Second}
	for {
		select {
		case <-stop:
			return
		default:
		}
		c, err := d.Dial("tcp", addr)
		dials.Add(1)
		if err != nil {
			time.Sleep(redial)
			continue
		}
		br := bufio.NewReader(c)
		for {
			if _, err := io.WriteString(c, request); err != nil {
				break
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			select {
			case <-stop:
				c.Close()
				return
			case <-time.After(every):
			}
		}
		c.Close()
		time.Sleep(redial)
	}
}

// placesAttack is a tenant's attack on the connection bound: lanes
// addresses keeping the pod light lane busy, holders connections of addrs
// other addresses each refreshing its place with request (freshHolder)
// every every, dialling again 5 ms after it is closed; and the API server
// (127.0.0.1), with a kept-alive pool and apis reviews in flight, its
// address known as the control plane's (as a check proves it) when
// controlPlane is set.
type placesAttack struct {
	lanes, holders, addrs, apis int
	every                       time.Duration
	request                     string
	controlPlane                bool
}

// runPlacesAttack runs a for 3 s: it returns how many of the API server's
// reviews failed, were cut before their answer, and were sent.
func runPlacesAttack(t *testing.T, a placesAttack) (failed_, cut_, total_ int64) {
	lanes, holders, addrs, apis, every := a.lanes, a.holders, a.addrs, a.apis, a.every
	bound := placesBound
	limits := serving.DefaultLimits
	limits.MaxConnections = bound
	if a.controlPlane {
		limits.ControlPlane = serving.NewControlPlane([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := serving.Listen(ctx, "127.0.0.1:0", nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(InjectPath, (&Injector{Personas: failing{}, ConfigMaps: failing{}}).Handler())
	hs := serving.NewHTTPServer(ctx, ln, mux, limits)
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	addr := ln.Addr().String()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var dials atomic.Int64
	heavy := laneFillingReview("heavy")
	for i := 0; i < lanes; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); loopReviews(addr, fmt.Sprintf("127.0.0.%d", 2+i), false, heavy, stop) }()
	}
	for i := 0; i < holders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			freshHolder(addr, fmt.Sprintf("127.1.%d.%d", i%addrs/200, 1+i%addrs%200), a.request, every, 5*time.Millisecond, stop, &dials)
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	// The API server: one address, a kept-alive pool, 4 reviews in flight.
	api := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 12 * time.Second}
	var failed, total, slow atomic.Int64
	var logged atomic.Int64
	var awg sync.WaitGroup
	d0 := dials.Load()
	begin := time.Now()
	var cut, maxOK atomic.Int64
	for g := 0; g < apis; g++ {
		awg.Add(1)
		go func() {
			defer awg.Done()
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				total.Add(1)
				start := time.Now()
				resp, err := api.Post("http://"+addr+InjectPath+"?timeout=5s", "application/json", bytes.NewReader(podReview("apiserver", agentContainer, 100)))
				if err != nil {
					failed.Add(1)
					cut.Add(1)
					if logged.Add(1) <= 5 {
						t.Logf("API server: %v after %v", err, time.Since(start).Round(time.Millisecond))
					}
					continue
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if el := time.Since(start); el > 50*time.Millisecond {
					slow.Add(1)
					for m := maxOK.Load(); int64(el) > m && !maxOK.CompareAndSwap(m, int64(el)); m = maxOK.Load() {
					}
				}
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"allowed":true`) {
					failed.Add(1)
					if logged.Add(1) <= 5 {
						t.Logf("API server: %s after %v: %.120s", resp.Status, time.Since(start).Round(time.Millisecond), raw)
					}
				}
			}
		}()
	}
	awg.Wait()
	elapsed := time.Since(begin)
	close(stop)
	cancel()
	hs.Close()
	wg.Wait()
	t.Logf("lanes %d, holders %d, API server's reviews in flight %d: tenant dials %.0f/s; the API server's reviews: %d of %d failed (%d cut before the answer), %d waited over 50 ms (the longest %v)",
		lanes, holders, apis, float64(dials.Load()-d0)/elapsed.Seconds(), failed.Load(), total.Load(), cut.Load(), slow.Load(), time.Duration(maxOK.Load()).Round(time.Millisecond))
	return failed.Load(), cut.Load(), total.Load()
}

// Tenant places refreshed every 0.5 s with a request of their own, more
// than the bound, and four addresses keeping the pod lane busy, so that
// the API server's reviews queue for their turn: none of them is cut (when
// queued places went first, 32 of 37 were, at the bound of 1,024).
func TestPlacesRefreshedByTheirHoldersCutNoQueuedReview(t *testing.T) {
	if failed, cut, total := runPlacesAttack(t, placesAttack{lanes: 4, holders: placesBound + 8, addrs: 8, apis: 1, every: 500 * time.Millisecond}); cut > 0 {
		t.Errorf("the API server's queued reviews were the victims: %d of %d were cut before their answer (%d failed)", cut, total, failed)
	}
}

// The API server is one address among those taking turns for a lane: with
// four reviews in flight, behind four tenant addresses keeping the pod lane
// busy, each of its reviews has a turn within the wait its 5 s timeout
// allows (when an address with several waiting lost its turns, most were
// denied 429).
func TestTheAPIServersReviewsInFlightEachHaveATurn(t *testing.T) {
	if failed, _, total := runPlacesAttack(t, placesAttack{lanes: 4, addrs: 1, apis: 4}); failed > 0 {
		t.Errorf("4 tenant pods kept the API server's pod reviews out: %d of %d failed", failed, total)
	}
}

// Tenant places refreshed with a request every 30 ms, so that they are
// never idle long, and more of them than the bound: the API server's
// kept-alive connections, idle between its reviews, are not the ones taken
// (when places idle for 50 ms went first, they were, some just as a review
// was written on them: 58 of 519 cut at the bound of 1,024). Places held
// longest without a 2xx answer go first, but a pool idle longer than the
// tenant's newest connections is still taken now and then under load:
// its address is known, as its checks prove it.
func TestPlacesRefreshedFasterThanTheAPIServersPoolCutNoReview(t *testing.T) {
	if failed, cut, total := runPlacesAttack(t, placesAttack{holders: placesBound + 8, addrs: 8, apis: 8, every: 30 * time.Millisecond, controlPlane: true}); cut > 0 || failed > 0 {
		t.Errorf("%d of the API server's %d reviews failed, %d cut before their answer, want none", failed, total, cut)
	}
}

// The same refreshed places spread over 128 addresses, two each, fewer than
// the API server's eight reviews in flight and its kept-alive pool, with
// the lanes kept busy: none of its reviews is cut (when places were taken
// from the address holding the most, 326 of 406 were), its address known.
func TestPlacesSpreadOverManyAddressesCutNoReview(t *testing.T) {
	if failed, cut, total := runPlacesAttack(t, placesAttack{lanes: 4, holders: placesBound + 8, addrs: placesBound / 2, apis: 8, every: 30 * time.Millisecond, controlPlane: true}); cut > 0 || failed > 0 {
		t.Errorf("%d of the API server's %d reviews failed, %d cut before their answer, want none", failed, total, cut)
	}
}

// rawRequest is an HTTP/1.1 POST of body to path, as a tenant's pod writes
// it on its own connection.
func rawRequest(path string, body []byte) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
}

// Nothing in a request tells a tenant's pod from the API server: a GET of
// the injection's path is answered 200 (controller-runtime's error review)
// at no cost, so places refreshed with it every 30 ms are "of use" as much
// as the API server's. Its address known (as its checks prove it), the API
// server's places are never taken: none of its reviews is cut (without it,
// 29 to 104 of 500 to 1,700 were, at the bound of 1,024).
func TestPlacesKeptOfUseWithAnswers200CutNoReviewOfTheControlPlane(t *testing.T) {
	if failed, cut, total := runPlacesAttack(t, placesAttack{holders: placesBound + 8, addrs: 8, apis: 8, every: 30 * time.Millisecond,
		request: "GET " + InjectPath + " HTTP/1.1\r\nHost: webhook\r\n\r\n", controlPlane: true}); cut > 0 || failed > 0 {
		t.Errorf("%d of the API server's %d reviews failed, %d cut before their answer, want none", failed, total, cut)
	}
}

// Tenant pods churning lane-filling reviews of their own on new
// connections, behind four addresses keeping the pod lane busy: their new
// connections, still sending, are not held, so the places queued are the
// API server's. Its address known, none of its reviews is cut (without
// it, 26 to 64 of 52 to 68 were, at the bound of 1,024).
func TestQueuedChurnCutsNoReviewOfTheControlPlane(t *testing.T) {
	if failed, cut, total := runPlacesAttack(t, placesAttack{lanes: 4, holders: placesBound + 8, addrs: 8, apis: 8, every: time.Millisecond,
		request: rawRequest(InjectPath, laneFillingReview("queued")), controlPlane: true}); cut > 0 {
		t.Errorf("%d of the API server's %d reviews were cut before their answer (%d failed), want none", cut, total, failed)
	}
}
