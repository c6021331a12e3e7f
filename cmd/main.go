// Command manager runs the persona-operator: the Persona, PromptLayer,
// ClusterPromptLayer and PromptPlatform controllers, the validating webhook
// and the pod injection.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/persona-operator/persona-operator/internal/controller"
	"github.com/persona-operator/persona-operator/internal/memorylimit"
	personawebhook "github.com/persona-operator/persona-operator/internal/webhook"
)

// eventsFlushTimeout is how long the manager, its controllers stopped,
// writes the Events they recorded before it exits: within the pod's
// termination grace period, after --shutdown-delay.
const eventsFlushTimeout = 2 * time.Second

func main() {
	controller.ListAtStart()
	flags, logOpts := parseFlags()
	ctrl.SetLogger(zap.New(logger(logOpts)))
	log := ctrl.Log.WithName("setup")
	memorylimit.SetFromContainer(log)
	fail := func(err error, what string) {
		log.Error(err, what)
		os.Exit(1)
	}

	shutdown := &drain{delay: flags.shutdownDelay}
	certs, err := webhookCertificate(flags)
	if err != nil {
		fail(err, "the webhook certificate")
	}
	restarts := flags.restartOptions()
	mgr, err := newManager(flags, restarts, shutdown, certs)
	if err != nil {
		fail(err, "create the manager")
	}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	ctx := shutdown.context(log, signals, func() { os.Exit(1) })
	parts, err := controller.Setup(ctx, mgr, controller.Options{
		PersonaWorkers: flags.personaWorkers, ReferenceGracePeriod: flags.referenceGracePeriod, GuardrailDeadline: flags.guardrailDeadline,
		WatchNamespaces: flags.watchNamespaces, ReadUnlabelledSources: flags.readUnlabelledSources,
		SnapshotBytesPerNamespace: flags.snapshotBytesPerNamespace, AgentsInterval: flags.agentsInterval,
		Restarts: restarts,
	})
	if err != nil {
		fail(err, "set up the controllers")
	}
	if err := personawebhook.Register(mgr, parts.TemplateSources); err != nil {
		fail(err, "register the webhook")
	}
	personawebhook.RegisterInjection(mgr, parts.Delivered, parts.Snapshots, flags.watchNamespaces, flags.injection)
	certReady, err := manageWebhookCertificate(mgr, flags, certs)
	if err != nil {
		fail(err, "manage the webhook certificate")
	}
	if err := addProbes(mgr, flags.probeAddr, probes{
		healthz: map[string]healthz.Checker{"healthz": healthz.Ping},
		readyz:  map[string]healthz.Checker{"webhook": webhookReady(certReady, mgr.GetWebhookServer().StartedChecker()), "shutdown": shutdown.readyz},
	}); err != nil {
		fail(err, "serve the health probes")
	}
	log.Info("starting the manager")
	err = mgr.Start(ctx)
	// The controllers have stopped: write the Events they recorded.
	stopping, cancel := context.WithTimeout(context.Background(), eventsFlushTimeout)
	parts.Events.Stop(stopping)
	cancel()
	if err != nil {
		fail(err, "run the manager")
	}
}
