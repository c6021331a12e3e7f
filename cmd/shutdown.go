package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// drain is how a replica shuts down without refusing an admission request.
// A deleted pod leaves its Service's endpoints at once, but the API server
// and kube-proxy take a moment to stop sending to it, and the API server
// keeps its connections open: a replica that closed its listener at once
// would fail the requests still sent to it, and with failurePolicy Fail
// those requests are refused. So on the first signal the replica stops
// being ready, asks each client to close its connection after the response
// it gets, and serves on for delay; then the manager stops. A second signal
// ends the process at once.
type drain struct {
	delay    time.Duration
	draining atomic.Bool
}

// context is canceled delay after the first of signals; a second signal
// calls exit.
func (d *drain) context(log logr.Logger, signals <-chan os.Signal, exit func()) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-signals
		d.draining.Store(true)
		log.Info("shutting down: no longer ready, serving on while clients move to other replicas", "delay", d.delay)
		select {
		case <-time.After(d.delay):
		case <-signals:
			exit()
		}
		cancel()
		<-signals
		exit()
	}()
	return ctx
}

// readyz fails once the replica drains.
func (d *drain) readyz(*http.Request) error {
	if d.draining.Load() {
		return errors.New("shutting down")
	}
	return nil
}

// handler asks clients to close their connection after each response while
// the replica drains, so that none is left to the listener's close.
func (d *drain) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// drainingWebhookServer is the webhook server with every handler behind
// the drain's.
type drainingWebhookServer struct {
	webhook.Server
	drain *drain
}

func (s drainingWebhookServer) Register(path string, hook http.Handler) {
	s.Server.Register(path, s.drain.handler(hook))
}
