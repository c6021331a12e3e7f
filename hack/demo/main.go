// Command demo runs persona-operator on a local control plane: it starts
// kube-apiserver and etcd (from KUBEBUILDER_ASSETS), installs the CRDs and
// the webhook, runs the manager binary, labels the namespace default so the
// sample guardrail selects it, applies config/samples and prints, for every
// persona, its system prompt beside its persona.md and where each piece of
// the prompt came from; then one object the webhook refuses. Run it with
// `make demo`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/term"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// logDir holds the manager's log, relative to the repository. It is under
// bin/ (ignored by git) so that it outlives the demo.
const logDir = "bin/demo"

func main() {
	wait := flag.Bool("wait", term.IsTerminal(int(os.Stdin.Fd())), "keep the control plane running until interrupted (default: when run from a terminal)")
	flag.Parse()
	if err := run(*wait); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(wait bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	step("building the manager")
	dir, err := os.MkdirTemp("", "persona-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	binary, err := controlplane.BuildManager(ctx, root, dir)
	if err != nil {
		return err
	}
	objs, err := readSamples(filepath.Join(root, "config", "samples"))
	if err != nil {
		return err
	}

	step("starting kube-apiserver and etcd, installing the CRDs and the webhook")
	plane, err := controlplane.Start(root)
	if err != nil {
		return err
	}
	defer func() { _ = plane.Stop() }()
	if err := os.MkdirAll(filepath.Join(root, logDir), 0o755); err != nil {
		return err
	}
	logFile := filepath.Join(logDir, "manager.log")
	log, err := os.Create(filepath.Join(root, logFile))
	if err != nil {
		return err
	}
	defer log.Close()
	step("starting the manager (log: " + logFile + ", kept after the demo ends)")
	manager, err := plane.NewManager(binary, log)
	if err != nil {
		return err
	}
	if err := manager.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = manager.Stop() }()

	step("labelling the namespace default for the sample guardrails")
	if err := labelForGuardrails(ctx, plane.Client, objs); err != nil {
		return err
	}
	step("applying config/samples")
	names, err := createSamples(ctx, plane.Client, objs)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := printPersona(ctx, plane.Client, name); err != nil {
			return err
		}
	}
	if err := showRefusal(ctx, plane.AdminKubeconfig); err != nil {
		return err
	}
	fmt.Printf("\nThe manager's log is in %s.\n", logFile)
	if !wait {
		fmt.Println("Done; the control plane is stopped. Run `make demo` from a terminal (or with DEMO_FLAGS=-wait) to keep it running.")
		return nil
	}
	fmt.Printf("The control plane is up. Look around with:\n  kubectl --kubeconfig %s get personas,promptlayers,clusterpromptlayers,configmaps\nPress Ctrl-C to stop.\n", plane.AdminKubeconfig)
	<-ctx.Done()
	return nil
}

func step(msg string) { fmt.Fprintf(os.Stderr, "==> %s\n", msg) }
