package webhook

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/persona-operator/persona-operator/internal/render"
)

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
	l := newInflight(LightInflightBytes, HeavyInflightBytes, render.DefaultLimits)
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

// TestSlowBodyIsServedOutsideTheLane: a body that arrives after its prompt
// deadline but within its body deadline is served; when the slow pool is
// full, the next slow body is refused at its prompt deadline.
func TestSlowBodyIsServedOutsideTheLane(t *testing.T) {
	l := newInflight(LightInflightBytes, HeavyInflightBytes, render.DefaultLimits)
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

	l.slow.TryAcquire(slowBodyBytes) // the pool full
	start := time.Now()
	conn = trickle(t, srv, 60<<10, 1<<20, 100*time.Millisecond)
	defer conn.Close()
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	if took := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(got), "slow bodies") || took > time.Second {
		t.Errorf("a slow body beside a full slow pool: %s %q after %v; want 408 at its prompt deadline", resp.Status, got, took)
	}
}
