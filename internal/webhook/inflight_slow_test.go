package webhook

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/persona-operator/persona-operator/internal/render"
)

// otherClient is a loopback address other than the one the test's own
// requests come from.
const otherClient = "127.0.0.2"

// dialFrom connects to srv from the address ip.
func dialFrom(t *testing.T, srv *httptest.Server, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// trickle opens a connection to srv and sends an admission request of n
// body bytes, a byte every interval, for at most sent bytes; it returns the
// connection, which answers once the server is done with the request.
func trickle(t *testing.T, srv *httptest.Server, n, sent int, interval time.Duration) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body := review(t, "slow", n)
	fmt.Fprintf(conn, "POST /?timeout=10s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	go func() {
		for i := 0; i < min(sent, len(body)); i++ {
			if _, err := conn.Write(body[i : i+1]); err != nil {
				return
			}
			time.Sleep(interval)
		}
	}()
	return conn
}

// TestSlowBodiesDoNotStarveOrdinaryRequests: clients that send bodies of
// 64 KiB a byte at a time, enough of them to fill the lane of ordinary
// requests and queue behind it, hold the lane only until their prompt
// deadline, so an ordinary request sent after them is answered at once.
func TestSlowBodiesDoNotStarveOrdinaryRequests(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	slowBody := len(review(t, "slow", 60<<10))
	if slowBody > lightRequestBytes || 3*l.requestWeight(int64(slowBody)) <= l.light.limit {
		t.Fatalf("three slow bodies of %d bytes do not fill the lane of ordinary requests", slowBody)
	}
	srv := httptest.NewServer(l.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("validated"))
	})))
	defer srv.Close()
	for range 3 {
		conn := trickle(t, srv, 60<<10, 1<<20, 100*time.Millisecond)
		defer conn.Close()
	}
	time.Sleep(100 * time.Millisecond)

	start := time.Now()
	resp, err := http.Post(srv.URL+"/?timeout=10s", "application/json", bytes.NewReader(review(t, "ordinary", 2<<10)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusOK || string(got) != "validated" || took > time.Second {
		t.Errorf("an ordinary request beside slow bodies: %s %q after %v; want validated within 1 s", resp.Status, got, took)
	}
}

// TestSlowBodyIsCutWhenOthersWait: a body that arrives after its prompt
// deadline but within its body deadline is served while nobody waits for
// room; once a request of another client waits, a body that stalls, or is
// past its prompt deadline, is cut short (408), and the waiting request is
// served.
func TestSlowBodyIsCutWhenOthersWait(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	srv := httptest.NewServer(l.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("validated"))
	})))
	defer srv.Close()
	body := review(t, "late", 100)
	// The whole body in bytes sent every 2 ms: it arrives after the prompt
	// deadline, well within the body deadline.
	if d := time.Duration(len(body)) * 2 * time.Millisecond; d < promptDeadline(int64(len(body))) || d > bodyDeadline(int64(len(body)))/2 {
		t.Fatalf("a body of %d bytes sent in %v is not slow but in time", len(body), d)
	}
	conn := trickle(t, srv, 100, len(body), 2*time.Millisecond)
	defer conn.Close()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(got) != "validated" {
		t.Errorf("a slow body within its deadline: %s %q", resp.Status, got)
	}

	// Room for less than what a slow body sent at once holds (its 50 KiB
	// are charged 102 KiB, past one and a half times the room of 64 KiB),
	// so that the ordinary request (charged 112 KiB) cannot go past the
	// limit beside it and must wait for it. The slow body comes from
	// another client, whose share is all the room while it is alone. One stalls
	// after its first 50 KiB, and is cut stallGrace after its last bytes or
	// at its prompt deadline, whichever comes first; one sends a byte every
	// 20 ms, never stalled, and is cut at its prompt deadline.
	for _, tc := range []struct {
		name     string
		interval time.Duration
		cutAfter time.Duration
	}{
		{"stalls", 0, min(stallGrace, promptDeadline(55<<10))},
		{"trickles", 20 * time.Millisecond, promptDeadline(55 << 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.light.receiving = newReceiving(64 << 10)
			slow := review(t, "slow", 55<<10)
			start := time.Now()
			conn := dialFrom(t, srv, otherClient)
			defer conn.Close()
			fmt.Fprintf(conn, "POST /?timeout=10s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(slow))
			if _, err := conn.Write(slow[:50<<10]); err != nil {
				t.Fatal(err)
			}
			if tc.interval > 0 {
				go func() {
					for i := 50 << 10; i < len(slow); i++ {
						if _, err := conn.Write(slow[i : i+1]); err != nil {
							return
						}
						time.Sleep(tc.interval)
					}
				}()
			}
			time.Sleep(50 * time.Millisecond)
			type answer struct {
				status string
				took   time.Duration
			}
			ordinary := make(chan answer)
			go func() {
				resp, err := http.Post(srv.URL+"/?timeout=10s", "application/json", bytes.NewReader(review(t, "ordinary", 60<<10)))
				if err != nil {
					ordinary <- answer{status: err.Error()}
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				ordinary <- answer{resp.Status + " " + string(got), time.Since(start)}
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			if took := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || took > time.Second {
				t.Errorf("a slow body while another waits: %s %q after %v; want 408 within 1 s", resp.Status, got, took)
			}
			if got := <-ordinary; got.status != "200 OK validated" || got.took < tc.cutAfter || got.took > time.Second {
				t.Errorf("the request that waited for room: %q after %v; want it validated once the slow body is cut (after %v), within 1 s", got.status, got.took, tc.cutAfter)
			}
		})
	}
}

// TestHeaderOnlyStreamDoesNotStarveOrdinaryRequests: a steady stream of
// requests that name a body and never send it, a hundred a second, every
// other one naming the largest body the webhook takes, at both webhooks:
// the API server's requests are still answered within a second.
func TestHeaderOnlyStreamDoesNotStarveOrdinaryRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    *inflight
		path string
		body func(uid string) []byte
		want func(*http.Response, []byte) bool
	}{
		{"validating", newInflight(render.DefaultLimits), "/",
			func(uid string) []byte { return review(t, uid, 2<<10) },
			func(resp *http.Response, got []byte) bool {
				return resp.StatusCode == http.StatusOK && string(got) == "validated"
			}},
		{"injecting", newPodInflight(PodInflightBytes, HeavyPodInflightBytes), "/",
			func(uid string) []byte { return podReview(uid, agentContainer, 2<<10) },
			func(resp *http.Response, got []byte) bool {
				return resp.StatusCode == http.StatusOK && string(got) == "validated"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = w.Write([]byte("validated"))
			})))
			defer srv.Close()
			stop := make(chan struct{})
			streamed := make(chan int)
			go func() {
				var conns []net.Conn
				defer func() {
					for _, c := range conns {
						c.Close()
					}
					streamed <- len(conns)
				}()
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					conn, err := net.Dial("tcp", srv.Listener.Addr().String())
					if err != nil {
						continue
					}
					length := int64(65000)
					if len(conns)%2 == 1 {
						length = tc.l.maxBytes - 1
					}
					fmt.Fprintf(conn, "POST %s?timeout=10s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tc.path, length)
					conns = append(conns, conn)
				}
			}()
			time.Sleep(time.Second) // the stream is steady
			var slowest time.Duration
			for i := range 10 {
				start := time.Now()
				resp, err := http.Post(srv.URL+tc.path+"?timeout=10s", "application/json", bytes.NewReader(tc.body(fmt.Sprint("ordinary-", i))))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				slowest = max(slowest, took)
				if !tc.want(resp, got) || took > time.Second {
					t.Errorf("ordinary request %d amid the stream: %s %q after %v; want it answered within 1 s", i, resp.Status, got, took)
				}
				time.Sleep(100 * time.Millisecond)
			}
			close(stop)
			t.Logf("%d header-only requests streamed; the slowest ordinary request took %v", <-streamed, slowest)
		})
	}
}

// TestBodyStreamOfAnotherClientDoesNotStarveOrdinaryRequests: a client that
// sends real bytes, each body one byte short of its length (100 at once,
// then 200 a second of 64 KiB at the light lanes, 10 a second of 2 MiB at
// the heavy ones, about 12 MB/s), fills at most its share of the room; and
// clients at many addresses (100 at the light lanes, 8 at the heavy ones),
// each keeping one body open that stops just short of needing more than
// its share, are cut short one by one as they stall, and benched. Either
// way the API server's requests that need room, of every lane, are
// answered within a second.
func TestBodyStreamOfAnotherClientDoesNotStarveOrdinaryRequests(t *testing.T) {
	validating := func() *inflight { return newInflight(render.DefaultLimits) }
	injecting := func() *inflight { return newPodInflight(PodInflightBytes, HeavyPodInflightBytes) }
	for _, tc := range []struct {
		name string
		l    *inflight
		// One address: burst bodies at once, then rate a second. Several:
		// one body open at each at a time.
		addresses, burst, rate int
		length, sent           int
		timeout                string
		body                   func(uid string) []byte
	}{
		{"validating, light", validating(), 1, 100, 200, lightRequestBytes, lightRequestBytes - 1, "10s",
			func(uid string) []byte { return review(t, uid, 48<<10) }},
		{"validating, heavy", validating(), 1, 4, 10, 2 << 20, 2<<20 - 1, "10s",
			func(uid string) []byte { return review(t, uid, 3<<20) }},
		{"injecting, light", injecting(), 1, 100, 200, lightRequestBytes, lightRequestBytes - 1, "5s",
			func(uid string) []byte { return podReview(uid, agentContainer, 48<<10) }},
		{"injecting, heavy", injecting(), 1, 4, 10, 2 << 20, 2<<20 - 1, "5s",
			func(uid string) []byte { return podReview(uid, agentContainer, 1<<20) }},
		{"validating, light, 100 addresses", validating(), 100, 0, 0, lightRequestBytes, 40 << 10, "10s",
			func(uid string) []byte { return review(t, uid, 48<<10) }},
		{"validating, heavy, 8 addresses", validating(), 8, 0, 0, 7<<20 - 1, 512 << 10, "10s",
			func(uid string) []byte { return review(t, uid, 3<<20) }},
		{"injecting, light, 100 addresses", injecting(), 100, 0, 0, lightRequestBytes, 40 << 10, "5s",
			func(uid string) []byte { return podReview(uid, agentContainer, 48<<10) }},
		{"injecting, heavy, 8 addresses", injecting(), 8, 0, 0, 2 << 20, 512 << 10, "5s",
			func(uid string) []byte { return podReview(uid, agentContainer, 1<<20) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = w.Write([]byte("validated"))
			})))
			defer srv.Close()
			sent := bytes.Repeat([]byte("x"), tc.sent)
			stop := make(chan struct{})
			var streamed atomic.Int64
			var senders sync.WaitGroup
			// send opens a connection from ip and sends a body short of its
			// length, which it holds until the server cuts it.
			send := func(ip string) net.Conn {
				conn := dialFrom(t, srv, ip)
				fmt.Fprintf(conn, "POST /?timeout=%s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tc.timeout, tc.length)
				go func() { _, _ = conn.Write(sent) }()
				streamed.Add(1)
				return conn
			}
			if tc.addresses == 1 {
				senders.Add(1)
				go func() {
					defer senders.Done()
					var conns []net.Conn
					defer func() {
						for _, c := range conns {
							c.Close()
						}
					}()
					for range tc.burst {
						conns = append(conns, send(otherClient))
					}
					tick := time.NewTicker(time.Second / time.Duration(tc.rate))
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
							conns = append(conns, send(otherClient))
						}
					}
				}()
			}
			for i := range tc.addresses * min(tc.addresses-1, 1) {
				senders.Add(1)
				go func() {
					defer senders.Done()
					for {
						conn := send(fmt.Sprintf("127.0.1.%d", i+1))
						done := make(chan struct{})
						go func() {
							defer close(done)
							_, _ = http.ReadResponse(bufio.NewReader(conn), nil)
						}()
						select {
						case <-stop:
							conn.Close()
							return
						case <-done:
							conn.Close()
						}
					}
				}()
			}
			time.Sleep(time.Second) // the stream is steady
			var slowest time.Duration
			for i := range 8 {
				body := tc.body(fmt.Sprint("ordinary-", i))
				start := time.Now()
				resp, err := http.Post(srv.URL+"/?timeout="+tc.timeout, "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				slowest = max(slowest, took)
				if resp.StatusCode != http.StatusOK || string(got) != "validated" || took > time.Second {
					t.Errorf("request %d of %d bytes amid the stream: %s %.200q after %v; want it validated within 1 s", i, len(body), resp.Status, got, took)
				}
				time.Sleep(100 * time.Millisecond)
			}
			close(stop)
			senders.Wait()
			t.Logf("%d bodies streamed; the slowest request took %v", streamed.Load(), slowest)
		})
	}
}

// TestConcurrentLargeBodiesOfOneClientDoNotWaitForEachOther: the API
// server's own bodies, each larger than the room for bodies being received
// can hold beside the other, never wait for one another: the first begun
// goes on past the limit.
func TestConcurrentLargeBodiesOfOneClientDoNotWaitForEachOther(t *testing.T) {
	srv := validating(t, newInflight(render.DefaultLimits))
	for round := range 3 {
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				resp, err := http.Post(srv.URL+"/?timeout=10s", "application/json", bytes.NewReader(review(t, fmt.Sprint(round, "-", i), 3<<20)))
				if err != nil {
					t.Error(err)
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if took := time.Since(start); resp.StatusCode != http.StatusOK || string(got) != "validated" || took > 2*time.Second {
					t.Errorf("round %d, body %d of 3 MiB: %s %.200q after %v; want it validated within 2 s", round, i, resp.Status, got, took)
				}
			}()
		}
		wg.Wait()
	}
}

// TestChainedBodiesStayWithinTheBound: clients at twelve addresses, each
// beginning a body of nearly the largest size, then one that sends nothing,
// then half the large body and a byte every 20 ms, one address after
// another: each silent body is cut when the next address waits, which
// benches its client while its large body still holds what it received.
// The bodies being received never hold more than one and a half times the
// room and one body.
func TestChainedBodiesStayWithinTheBound(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	srv := validating(t, l)
	rv := l.heavy.receiving
	var most atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			rv.mu.Lock()
			if rv.held > most.Load() {
				most.Store(rv.held)
			}
			rv.mu.Unlock()
		}
	}()
	const n = maxRequestBytes - 4<<10
	var conns []net.Conn
	var wg sync.WaitGroup
	for k := range 12 {
		ip := fmt.Sprintf("127.0.2.%d", k+1)
		large := dialFrom(t, srv, ip)
		fmt.Fprintf(large, "POST /?timeout=10s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", n)
		time.Sleep(20 * time.Millisecond)
		silent := dialFrom(t, srv, ip)
		fmt.Fprintf(silent, "POST /?timeout=10s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 100<<10)
		conns = append(conns, large, silent)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(300 * time.Millisecond)
			if _, err := large.Write(bytes.Repeat([]byte("x"), n/2+4<<10)); err != nil {
				return
			}
			for range 200 {
				if _, err := large.Write([]byte("x")); err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		time.Sleep(40 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	<-watched
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	// A body of n bytes is charged twice, as its buffer grows by doubling.
	bound := rv.limit + rv.limit/2 + 2*maxRequestBytes
	t.Logf("the most the bodies being received held: %.1f MiB (bound %.1f MiB)", float64(most.Load())/(1<<20), float64(bound)/(1<<20))
	if most.Load() > bound {
		t.Errorf("the bodies being received held %.1f MiB, over one and a half times the room and one body, %.1f MiB", float64(most.Load())/(1<<20), float64(bound)/(1<<20))
	}
}

// postFrom posts body to srv from the address ip, and returns the answer's
// status, the start of its body (or the error), and how long it took.
func postFrom(t *testing.T, srv *httptest.Server, ip string, body []byte) (int, string, time.Duration) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}}
	defer client.CloseIdleConnections()
	start := time.Now()
	resp, err := client.Post(srv.URL+"/?timeout=10s", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err.Error(), time.Since(start)
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	resp.Body.Close()
	return resp.StatusCode, string(answer), time.Since(start)
}

// TestTheAPIServersOfAnHAControlPlaneNeverWaitOnEachOther: three API
// servers, each with two reviews of 3 MiB Personas under way at all
// times, for 10 s: none of them waits 4 s or is denied. (A body that became
// its client's first after a later one had gone beyond the room waited
// for that one, which waited for it in turn: 5 of 2,895 were denied. Then
// buffers grown by append, half as much again as charged, took several
// bodies beyond the room at once, each waiting for the others: 5 of 1,642
// denied on a loaded machine.)
func TestTheAPIServersOfAnHAControlPlaneNeverWaitOnEachOther(t *testing.T) {
	srv := httptest.NewServer(newInflight(render.DefaultLimits).wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("validated"))
	})))
	defer srv.Close()
	var sent, slow, denied atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(10 * time.Second)
	for a := range 3 {
		body := review(t, fmt.Sprint("api", a), 3<<20)
		for range 2 {
			wg.Go(func() {
				for time.Now().Before(end) {
					status, answer, took := postFrom(t, srv, fmt.Sprintf("127.0.9.%d", a+1), body)
					sent.Add(1)
					if took > 4*time.Second {
						slow.Add(1)
					}
					if status != http.StatusOK || answer != "validated" {
						denied.Add(1)
						t.Logf("from 127.0.9.%d after %v: %d %s", a+1, took, status, answer)
					}
				}
			})
		}
	}
	wg.Wait()
	t.Logf("3 API servers, two 3 MiB reviews each under way, for 10 s: %d reviews, %d waited over 4 s, %d denied", sent.Load(), slow.Load(), denied.Load())
	if slow.Load() > 0 || denied.Load() > 0 {
		t.Errorf("%d of the API servers' reviews waited over 4 s, %d were not validated; want none", slow.Load(), denied.Load())
	}
}

// TestABodyBeyondTheRoomIsNotHeldUpByAnEarlierOneThatCannotGo: a body went
// beyond one and a half times the room while the first body of another
// client was not its client's first; that one has ended, and the other,
// begun before the body beyond, holds nothing yet. It cannot go beyond (the
// others hold more than one and a half times the room beside it), so it
// must not hold up the body beyond, which alone can make the room again.
func TestABodyBeyondTheRoomIsNotHeldUpByAnEarlierOneThatCannotGo(t *testing.T) {
	rv := newReceiving(8 << 20)
	first := rv.begin("127.0.0.1", nil)
	earlier := rv.begin("127.0.0.1", nil)
	beyond := rv.begin(otherClient, nil)
	rv.mu.Lock()
	rv.take(beyond, 14<<20)
	delete(rv.active, first) // its body has been read
	rv.mu.Unlock()
	rv.finish(first)
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.fits(earlier, 8<<10) {
		t.Errorf("the earlier body may take 8 KiB while the others hold 14 MiB, past one and a half times the room of 8 MiB")
	}
	if !rv.fits(beyond, 2<<20) {
		t.Errorf("the body beyond may not go on: it waits for the earlier body, which waits for it")
	}
	// Its client benched meanwhile (another of its bodies cut short), the
	// body beyond still goes on: it alone can make the room again.
	rv.benched[otherClient] = time.Now().Add(benchFor)
	if !rv.fits(beyond, 2<<20) {
		t.Errorf("the body beyond may not go on once its client is benched: every body waits until it is denied")
	}
}
