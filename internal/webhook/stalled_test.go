package webhook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/persona-operator/persona-operator/internal/render"
)

// validating serves l over a handler that reads the body and answers
// "validated".
func validating(t *testing.T, l *inflight) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		_, _ = w.Write([]byte("validated"))
	})))
	t.Cleanup(srv.Close)
	return srv
}

// stall opens a connection that sends the headers of a request with a
// body of length bytes, and never the body.
func stall(t *testing.T, srv *httptest.Server, length int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /?timeout=30s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", length)
	return c
}

// Connections that send headers and never their bodies, enough to fill the
// light lane were they let in by the length they name (twenty of 8 KiB
// weigh more than its 16 MiB), hold no share of it: an ordinary review is
// answered at once.
func TestStalledBodiesDoNotHoldTheLane(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	ordinary := review(t, "ok", 2000)
	if stalled := 20*l.requestWeight(8192) + l.requestWeight(3932); stalled+l.requestWeight(int64(len(ordinary))) <= l.light.limit {
		t.Fatalf("an ordinary request fits beside %d bytes of stalled ones in %d", stalled, l.light.limit)
	}
	srv := validating(t, l)
	for range 20 {
		stall(t, srv, 8192)
	}
	stall(t, srv, 3932)
	time.Sleep(200 * time.Millisecond)
	if held := l.light.held.Load(); held != 0 {
		t.Fatalf("the stalled requests hold %d bytes of the lane", held)
	}
	start := time.Now()
	resp, err := http.Post(srv.URL+"/?timeout=10s", "application/json", bytes.NewReader(ordinary))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "validated" || time.Since(start) > time.Second {
		t.Errorf("beside stalled requests, after %v: %s %s", time.Since(start), resp.Status, b)
	}
}

// A request whose body stops arriving holds what arrived of it among the
// bodies received, no share of a lane, and is answered 408 by its
// deadline, which gives back what it held.
func TestStalledBodyReleasesItsWeight(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	srv := validating(t, l)
	const length = 3 << 20
	start := time.Now()
	c := stall(t, srv, length)
	// Part of the body, then nothing.
	_, _ = c.Write(bytes.Repeat([]byte("x"), 100<<10))
	time.Sleep(100 * time.Millisecond)
	if held := l.heavy.held.Load(); held != 0 {
		t.Fatalf("holds %d bytes of the lane, want none", held)
	}
	l.heavy.receiving.mu.Lock()
	received := l.heavy.receiving.held
	l.heavy.receiving.mu.Unlock()
	// 100 KiB arrived: the buffer grown past it from its uncharged first
	// 4 KiB, counted twice; the allocator may round each growth up.
	if least := int64(2 * (100<<10 - firstChunk)); received < least || received > 2*least {
		t.Fatalf("the bodies received hold %d bytes, want at least %d", received, least)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != http.StatusRequestTimeout || took > bodyDeadline(length)+500*time.Millisecond {
		t.Errorf("a stalled body was answered %s after %v, its deadline is %v", resp.Status, took, bodyDeadline(length))
	}
	l.heavy.receiving.mu.Lock()
	defer l.heavy.receiving.mu.Unlock()
	if l.heavy.receiving.held != 0 {
		t.Errorf("after the answer, %d bytes are still held", l.heavy.receiving.held)
	}
}

// The timeout parameter, which whoever sends the request chooses, does not
// lengthen the wait past maxWait.
func TestTimeoutParameterCannotExtendTheWait(t *testing.T) {
	if got := waitFor(httptest.NewRequest("POST", "/", nil)); got != 5*time.Second {
		t.Errorf("without a timeout, waits %v, want 5s", got)
	}
	l := newInflight(render.DefaultLimits)
	l.maxWait = 300 * time.Millisecond
	release := make(chan struct{})
	entered := make(chan struct{})
	srv := httptest.NewServer(l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})))
	defer srv.Close()
	defer close(release)
	go func() {
		if resp, err := http.Post(srv.URL+"/?timeout=30s", "application/json", bytes.NewReader(review(t, "first", 3<<20))); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	second := review(t, "second", 3<<20)
	start := time.Now()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post(srv.URL+"/?timeout=1h", "application/json", bytes.NewReader(second))
	if err != nil {
		t.Fatalf("with timeout=1h: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Half of the first request's 30s would be 15s: a bound far below it
	// tells the cap from the parameter on a loaded machine too.
	if waited := time.Since(start); waited > l.maxWait+2*time.Second || !strings.Contains(string(b), "try again") {
		t.Errorf("with timeout=1h, answered after %v (maxWait %v): %s", waited, l.maxWait, b)
	}
}

// A request that names no length, or one over the limit, is refused at
// once, holding nothing.
func TestUnboundedRequestsAreRefused(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	srv := validating(t, l)
	for _, c := range []struct {
		name   string
		length int
		want   int
		reason string
	}{{"no length", -1, http.StatusLengthRequired, "NoContentLength"}, {"over the limit", maxRequestBytes + 1, http.StatusRequestEntityTooLarge, "OverSizeLimit"}} {
		counted := turnedAwayCounter("validating", c.reason)
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		header := "Transfer-Encoding: chunked"
		if c.length >= 0 {
			header = fmt.Sprintf("Content-Length: %d", c.length)
		}
		// Headers only: an answer means nothing waited for the body.
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", header)
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %s, want %d", c.name, resp.Status, c.want)
		}
		counted(t)
	}
	if l.light.held.Load() != 0 || l.heavy.held.Load() != 0 {
		t.Errorf("holds %d and %d", l.light.held.Load(), l.heavy.held.Load())
	}
}

// A denial that leaves the body unread closes the connection, which could
// not serve another request; one after the whole body keeps it.
func TestDenialWithAnUnreadBodyClosesTheConnection(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	for _, unread := range []bool{true, false} {
		rec := httptest.NewRecorder()
		l.light.deny(rec, bytes.NewReader(review(t, "denied", 2<<10)), unread)
		if got, want := rec.Header().Get("Connection") == "close", unread; got != want || !strings.Contains(rec.Body.String(), "u-denied") {
			t.Errorf("a denial with its body unread=%v: Connection close %v, want %v; answer %s", unread, got, want, rec.Body)
		}
	}
}

// A body that finds no room among those being received is read on and
// discarded before its denial, so that a client still sending it reads the
// answer, and its connection serves the next request: closed with the body
// unread, it would be reset, and a client that had not read the answer yet
// would lose it to a broken pipe.
func TestDenialWithoutRoomReadsTheRestOfTheBody(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	l.maxWait = 300 * time.Millisecond
	l.heavy.receiving = newReceiving(256 << 10)
	srv := validating(t, l)
	// The client's first body holds the room: it has sent 1 MiB of 3.
	holder := stall(t, srv, 3<<20)
	_, _ = holder.Write(bytes.Repeat([]byte("x"), 1<<20))
	time.Sleep(100 * time.Millisecond)

	var reused []bool
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	post := func(uid string, size int) *http.Response {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = append(reused, info.Reused) }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPost, srv.URL+"/?timeout=10s", bytes.NewReader(review(t, uid, size)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("the request %s: %v", uid, err)
		}
		return resp
	}

	counted := turnedAwayCounter("validating", "NoRoomToReceive")
	resp := post("no-room", 1<<20)
	var denial admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&denial); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r := denial.Response; r == nil || r.Allowed || r.UID != "u-no-room" || r.Result == nil || r.Result.Code != http.StatusTooManyRequests {
		t.Errorf("the request without room was answered %+v", r)
	}
	if resp.Close {
		t.Error("the denial closes the connection, though its body was read to its end")
	}
	counted(t)
	resp = post("next", 2<<10)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "validated" || len(reused) != 2 || reused[0] || !reused[1] {
		t.Errorf("the next request was answered %q, on connections reused %v, want [false true]", b, reused)
	}
}

// The rest of a body turned away is read on until the request's own
// timeout when that is later than the time the rest may take to arrive:
// the API server sends every body that found no room at once, on a node
// they starve, and stops waiting for the answer only at the timeout. A
// rest that arrives after both is not read whole.
func TestDrainReadsOnUntilTheRequestsTimeout(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	// A wait longer than the grace of a body's deadline, so that the
	// request's timeout, twice its wait, comes after the rest's deadline.
	l.maxWait = bodyGrace + time.Second
	l.heavy.receiving = newReceiving(256 << 10)
	srv := validating(t, l)
	// The client's first body holds the room past the wait: it has sent
	// 1 MiB of 6, whose deadline is bodyDeadline(6 MiB), 3.5 s.
	holder := stall(t, srv, 6<<20)
	_, _ = holder.Write(bytes.Repeat([]byte("x"), 1<<20))
	time.Sleep(100 * time.Millisecond)

	body := review(t, "no-room", 80<<10)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	start := time.Now()
	fmt.Fprintf(conn, "POST /?timeout=30s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	_, _ = conn.Write(body[:firstChunk])
	// The rest arrives after its own deadline (from when the wait for room
	// ended), before the request's timeout.
	rest := int64(len(body) - firstChunk)
	own, timeout := l.maxWait+bodyDeadline(rest), 2*l.maxWait
	time.Sleep(time.Until(start.Add((own + timeout) / 2)))
	_, _ = conn.Write(body[firstChunk:])
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Close || !strings.Contains(string(b), "u-no-room") || !strings.Contains(string(b), "try again") {
		t.Errorf("the request whose rest came late was answered (connection closed: %v) %s", resp.Close, b)
	}

	t.Run("a rest later than the request's timeout too", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprint(w, drain(http.NewResponseController(w), r.Body, r.ContentLength, time.Now()))
		}))
		t.Cleanup(srv.Close)
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		const rest = 1 << 10
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", rest)
		time.Sleep(bodyDeadline(rest) + 500*time.Millisecond)
		_, _ = conn.Write(bytes.Repeat([]byte("x"), rest))
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != "false" {
			t.Errorf("a rest after its deadline and the timeout was drained: %s", b)
		}
	})
}

// turnedAwayCounter reads persona_webhook_requests_turned_away_total of
// webhook and reason now; the function it returns fails t unless exactly
// one more request was counted since.
func turnedAwayCounter(webhook, reason string) func(t *testing.T) {
	before := testutil.ToFloat64(turnedAwayTotal.WithLabelValues(webhook, reason))
	return func(t *testing.T) {
		t.Helper()
		if got := testutil.ToFloat64(turnedAwayTotal.WithLabelValues(webhook, reason)) - before; got != 1 {
			t.Errorf("persona_webhook_requests_turned_away_total{webhook=%q,reason=%q} grew by %v, want 1", webhook, reason, got)
		}
	}
}
