// Command demo runs persona-operator on a local control plane: it starts
// kube-apiserver and etcd (from KUBEBUILDER_ASSETS), installs the CRDs and
// the webhook, runs the manager binary, applies config/samples, and prints
// every persona's rendered prompt. Run it with `make demo`.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

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

	step("starting kube-apiserver and etcd, installing the CRDs and the webhook")
	plane, err := controlplane.Start(root)
	if err != nil {
		return err
	}
	defer plane.Stop()
	logFile := filepath.Join(dir, "manager.log")
	log, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer log.Close()
	step("starting the manager (log: " + logFile + ")")
	manager, err := plane.NewManager(binary, log)
	if err != nil {
		return err
	}
	if err := manager.Start(ctx); err != nil {
		return err
	}
	defer manager.Stop()

	step("applying config/samples")
	names, err := applySamples(ctx, plane.Client, filepath.Join(root, "config", "samples"))
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := printPersona(ctx, plane.Client, name); err != nil {
			return err
		}
	}
	if !wait {
		fmt.Println("\nDone; the control plane is stopped. Run `make demo` from a terminal (or with DEMO_FLAGS=-wait) to keep it running.")
		return nil
	}
	fmt.Printf("\nThe control plane is up. Look around with:\n  kubectl --kubeconfig %s get personas,promptlayers,configmaps\nPress Ctrl-C to stop.\n", plane.AdminKubeconfig)
	<-ctx.Done()
	return nil
}

func step(msg string) { fmt.Fprintf(os.Stderr, "==> %s\n", msg) }

// applySamples creates every object of the sample manifests in the default
// namespace and returns the Personas' names.
func applySamples(ctx context.Context, c client.Client, dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var personas []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := controlplane.DecodeManifest(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, u := range objs {
			if u.GetKind() == "Kustomization" {
				continue
			}
			u.SetNamespace(corev1.NamespaceDefault)
			if err := c.Create(ctx, u); err != nil {
				return nil, fmt.Errorf("%s: create %s %s: %w", filepath.Base(f), u.GetKind(), u.GetName(), err)
			}
			if u.GetKind() == "Persona" {
				personas = append(personas, u.GetName())
			}
		}
	}
	slices.Sort(personas)
	return personas, nil
}

// printPersona waits for a persona to settle and prints its prompt.
func printPersona(ctx context.Context, c client.Client, name string) error {
	key := client.ObjectKey{Namespace: corev1.NamespaceDefault, Name: name}
	var p v1alpha1.Persona
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := c.Get(ctx, key, &p); err != nil {
			return err
		}
		if cond := meta.FindStatusCondition(p.Status.Conditions, "Ready"); cond != nil && cond.ObservedGeneration == p.Generation {
			fmt.Printf("\n=== Persona %s: Ready=%s (%s)\n", name, cond.Status, cond.Reason)
			if cond.Status != "True" {
				fmt.Println(cond.Message)
				return nil
			}
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("persona %s did not settle in 30s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: p.Status.ConfigMapName}, &cm); err != nil {
		return err
	}
	fmt.Printf("--- ConfigMap %s, system-prompt.md (%d bytes):\n%s", cm.Name, len(cm.Data["system-prompt.md"]), cm.Data["system-prompt.md"])
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range cm.Data {
			if strings.HasPrefix(k, "system-prompt.") && k != "system-prompt.md" && !yield(k) {
				return
			}
		}
	}) {
		fmt.Printf("--- %s:\n%s", k, cm.Data[k])
	}
	return nil
}
