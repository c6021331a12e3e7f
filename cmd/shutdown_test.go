package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestDrainServesOnNoLongerReady: after the first signal the replica is no
// longer ready and asks clients to close their connections, yet serves on
// until the delay has passed; then the manager's context ends.
func TestDrainServesOnNoLongerReady(t *testing.T) {
	const delay = 300 * time.Millisecond
	d := &drain{delay: delay}
	signals := make(chan os.Signal, 2)
	exited := make(chan struct{})
	ctx := d.context(logr.Discard(), signals, func() { close(exited) })
	served := d.handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	get := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		served.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate", nil))
		return rec
	}

	if err := d.readyz(nil); err != nil {
		t.Fatalf("ready before a signal: %v", err)
	}
	if rec := get(); rec.Header().Get("Connection") != "" {
		t.Errorf("before a signal, Connection: %q, want it unset (kept alive)", rec.Header().Get("Connection"))
	}

	signaled := time.Now()
	signals <- syscall.SIGTERM
	waitUntil(t, func() bool { return d.readyz(nil) != nil })
	if rec := get(); rec.Code != http.StatusOK || rec.Header().Get("Connection") != "close" {
		t.Errorf("draining: status %d, Connection %q, want 200 and close", rec.Code, rec.Header().Get("Connection"))
	}
	select {
	case <-ctx.Done():
		t.Fatalf("the manager stopped %s after the signal, before the delay", time.Since(signaled))
	default:
	}
	<-ctx.Done()
	if waited := time.Since(signaled); waited < delay {
		t.Errorf("the manager stopped %s after the signal, want at least %s", waited, delay)
	}
	select {
	case <-exited:
		t.Fatal("exited on one signal")
	default:
	}
	signals <- syscall.SIGTERM
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("a second signal did not end the process")
	}
}

// TestDrainSecondSignalEndsAtOnce: a second signal during the delay ends
// the process without waiting for it.
func TestDrainSecondSignalEndsAtOnce(t *testing.T) {
	d := &drain{delay: time.Hour}
	signals := make(chan os.Signal, 2)
	exited := make(chan struct{})
	d.context(logr.Discard(), signals, func() { close(exited) })
	signals <- os.Interrupt
	signals <- os.Interrupt
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("a second signal during the delay did not end the process")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("not within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
