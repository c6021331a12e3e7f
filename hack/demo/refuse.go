package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// refused is a Persona whose extension template does not parse: the
// admission webhook refuses it at save time, naming the field.
const refused = `apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata:
  name: broken
  namespace: default
spec:
  inherit: [agentic]
  systemPrompt:
    extensions:
    - id: team
      template: "You work for team {{ .Vars.team }."
`

// showRefusal applies refused with the kubectl of KUBEBUILDER_ASSETS and
// prints the command, the manifest and what kubectl says. It fails when the
// object is accepted.
func showRefusal(ctx context.Context, kubeconfig string) error {
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	fmt.Printf("\n=== An object the webhook refuses\n$ kubectl apply -f - <<EOF\n%sEOF\n", refused)
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(refused)
	out, err := cmd.CombinedOutput()
	fmt.Print(string(out))
	var exit *exec.ExitError
	switch {
	case err == nil:
		return errors.New("the webhook accepted the Persona broken")
	case !errors.As(err, &exit):
		return fmt.Errorf("run %s: %w", kubectl, err)
	}
	fmt.Printf("(kubectl exited %d; nothing was stored)\n", exit.ExitCode())
	return nil
}
