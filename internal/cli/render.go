package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// The output formats of render.
const (
	outputPrompt    = "prompt"
	outputConfigMap = "configmap"
	outputBundle    = "bundle"
	// outputPersona is persona.md: the persona's own body, which Claude gets
	// as its agent definition instead of a persona section.
	outputPersona = "persona"
)

type renderOptions struct {
	source    source
	bundle    string
	persona   string
	variant   string
	turn      string
	output    string
	namespace string
	cluster   clusterInputsFlags
}

func newRenderCommand(s *Streams) *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render (-f PATH... | -k DIR | --bundle FILE) [flags]",
		Short: "Print a persona's system prompt, persona.md, ConfigMap or bundle",
		Long: `Render a persona as the operator does and print its system prompt (the
content of system-prompt.md), its persona.md (the persona's own body: Claude's
agent definition, which no system prompt of a claude persona holds), the
ConfigMap the operator would write, or the resolved bundle (bundle.json).

With -f, render reads manifests (files, directories searched recursively for
*.yaml, *.yml and *.json, or - for standard input; multi-document YAML is
fine; Personas, PromptLayers, ClusterPromptLayers, ConfigMaps and
Namespaces, whose labels select the ClusterPromptLayers, are read, other
kinds ignored);
with -k, what the kustomization in a directory builds. It checks every
Persona and PromptLayer as the admission webhook would, and resolves the
persona's parents, layers, includes and templateFrom ConfigMaps among them.
With several Personas, --persona selects one; without it render lists them
and exits 2.

With --bundle, render reads a mounted bundle.json instead: the per-turn
render inside an agent pod.

--turn applies a turn context, a JSON or YAML object with the context keys
of spec.context (workspace, slug, workspaceDir, repos, gitHubGateway,
hasResultSchema, flightMessages, knowledge, expectedOutput, tasks,
userSystemPrompt, appendSystemPrompt) plus harness, model, reasoningEffort
and streaming. Every field it sets overrides the persona's.`,
		Example: `  # The system prompt of the only persona in a file
  kubectl persona render -f persona.yaml

  # One persona of a GitOps directory, as Codex would get it
  kubectl persona render -f deploy/ --persona reviewer --variant codex

  # The persona.md a Claude agent takes as its agent definition
  kubectl persona render -f deploy/ --persona reviewer -o persona

  # A persona's ConfigMap, from a kustomize overlay
  kubectl persona render -k overlays/prod --persona reviewer -o configmap

  # Inside the agent pod, per turn
  kubectl-persona render --bundle /etc/persona/bundle.json --turn turn.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, s, args)
		},
	}
	o.source.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.bundle, "bundle", "", "render from a bundle.json `FILE` (- for standard input) instead of manifests")
	f.StringVar(&o.persona, "persona", "", "the persona to render, `NAME` or NAMESPACE/NAME (needed when the manifests hold several)")
	f.StringVar(&o.variant, "variant", "", "render the persona's variant `NAME` (with -o prompt)")
	f.StringVar(&o.turn, "turn", "", "turn context `FILE`, JSON or YAML (- for standard input)")
	f.StringVarP(&o.output, "output", "o", outputPrompt, "output `FORMAT`: prompt, persona, configmap or bundle")
	f.StringVarP(&o.namespace, "namespace", "n", manifest.DefaultNamespace, "the `NAMESPACE` of manifests that set none")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputPrompt, outputPersona, outputConfigMap, outputBundle}, cobra.ShellCompDirectiveNoFileComp))
	o.cluster.addFlags(cmd)
	return cmd
}

func (o *renderOptions) run(cmd *cobra.Command, s *Streams, args []string) error {
	if err := o.check(cmd, args); err != nil {
		return err
	}
	turn, err := readTurnFile(o.turn, s.In)
	if err != nil {
		return err
	}
	var b *render.Bundle
	var guardrails string // their identity, as the operator annotates it
	if o.bundle != "" {
		if b, err = readBundleFile(o.bundle, s.In); err != nil {
			return err
		}
	} else {
		res, err := o.resolve(cmd.Context(), s)
		if err != nil {
			return err
		}
		b = res.Bundle
		// The identity names each guardrail by its UID, which only objects
		// read from a cluster have.
		if !slices.ContainsFunc(res.Guardrails, func(g resolve.Guardrail) bool { return g.UID == "" }) {
			guardrails = resolve.GuardrailsIdentity(res.Guardrails)
		}
	}
	if turn != nil {
		b = b.WithTurn(turn)
	}
	out, err := o.render(b, guardrails)
	if err != nil {
		return failed("%s", renderFailure(b, err))
	}
	if _, err := s.Out.Write(out); err != nil {
		return failed("write output: %v", err)
	}
	return nil
}

// readTurnFile reads the turn context of --turn (docs/cli.md#turn-context):
// nil for no path, and a failure (status 1) naming the file for one that
// cannot be read or is not a turn context.
func readTurnFile(path string, stdin io.Reader) (*render.Turn, error) {
	if path == "" {
		return nil, nil
	}
	raw, name, err := readInput(path, stdin)
	if err != nil {
		return nil, failed("read turn context: %v", err)
	}
	turn, err := parseTurn(raw)
	if err != nil {
		return nil, failed("turn context %s: %v", name, err)
	}
	return turn, nil
}

// readBundleFile reads a bundle.json (--bundle): a failure (status 1)
// naming the file for one that cannot be read or is not a bundle.
func readBundleFile(path string, stdin io.Reader) (*render.Bundle, error) {
	raw, name, err := readInput(path, stdin)
	if err != nil {
		return nil, failed("read bundle: %v", err)
	}
	if err := checkDocument(raw, &render.Bundle{}); err != nil {
		return nil, failed("%s: not a bundle.json: %v", name, err)
	}
	b, err := render.UnmarshalBundle(raw)
	if err != nil {
		return nil, failed("%s: %v", name, err)
	}
	return b, nil
}

// check rejects flag combinations that make no sense (status 2).
func (o *renderOptions) check(cmd *cobra.Command, args []string) error {
	changed := cmd.Flags().Changed
	switch o.output {
	case outputPrompt, outputPersona, outputConfigMap, outputBundle:
	default:
		return usageError("--output %q is not one of prompt, persona, configmap, bundle", o.output)
	}
	if o.variant != "" && o.output != outputPrompt {
		return usageError("--variant renders one variant's prompt; it needs -o prompt, not -o %s (-o configmap holds every variant)", o.output)
	}
	if err := o.cluster.check(cmd); err != nil {
		return err
	}
	if o.bundle != "" {
		if o.cluster.enabled {
			return usageError("--cluster-inputs applies to manifests; a bundle holds every input of its render")
		}
		if !o.source.empty() {
			return usageError("-f, -k and --bundle are mutually exclusive: render either manifests or a bundle")
		}
		if len(args) > 0 {
			return usageError("unexpected arguments %q: a bundle is read with --bundle FILE", args)
		}
		if o.persona != "" {
			return usageError("--persona selects among manifests; a bundle holds one persona")
		}
		if changed("namespace") {
			return usageError("--namespace applies to manifests; a bundle records its persona's namespace")
		}
		if o.bundle == manifest.Stdin && o.turn == manifest.Stdin {
			return usageError("--bundle and --turn cannot both read standard input")
		}
		return nil
	}
	if o.source.empty() && len(args) == 0 {
		return usageError("one of -f PATH, -k DIR and --bundle FILE is required")
	}
	// Paths after -f, as a shell glob expands them: -f deploy/*.yaml.
	if err := o.source.check("-f", "-k", args); err != nil {
		return err
	}
	if o.turn == manifest.Stdin && o.source.readsStdin() {
		return usageError("-f - and --turn - cannot both read standard input")
	}
	return nil
}

// resolve reads the manifests, admits every Persona and PromptLayer, selects
// the persona to render and resolves it.
func (o *renderOptions) resolve(ctx context.Context, s *Streams) (*resolve.Result, error) {
	set, err := o.source.read(o.namespace, s.In)
	if err != nil {
		return nil, failed("%v", err)
	}
	if err := o.cluster.add(ctx, s, set); err != nil {
		return nil, failed("%v", err)
	}
	ps := problems(set.Problems)
	admit(set, &ps)
	if len(ps) > 0 {
		ps.write(s.Err)
		return nil, failed("the manifests are not valid (%s); run '%s validate' on them for every problem", plural(len(ps), "problem"), Name)
	}
	obj, err := o.selectPersona(set)
	if err != nil {
		return nil, err
	}
	var p v1alpha1.Persona
	if err := obj.Decode(&p); err != nil {
		return nil, failed("%v", err)
	}
	res, err := resolve.Resolve(ctx, set, &p)
	if err != nil {
		return nil, failed("persona %q: %s", p.Name, resolveFailure(set, p.Namespace, err))
	}
	return res, nil
}

// selectPersona picks the persona to render: the one --persona names or the
// only one. With several and no --persona, it lists them (status 2), for
// every output format.
func (o *renderOptions) selectPersona(set *manifest.Set) (*manifest.Object, error) {
	all := set.Personas()
	if o.persona != "" {
		ns, name, qualified := strings.Cut(o.persona, "/")
		if !qualified {
			name, ns = ns, ""
		}
		var found []*manifest.Object
		for _, p := range all {
			if p.Name == name && (ns == "" || p.Namespace == ns) {
				found = append(found, p)
			}
		}
		switch len(found) {
		case 0:
			if len(all) == 0 {
				return nil, failed("persona %q not found: the manifests hold no Persona", o.persona)
			}
			return nil, failed("persona %q not found; the manifests hold %s", o.persona, personaNames(all))
		case 1:
			return found[0], nil
		}
		return nil, usageError("persona %q is in several namespaces: %s; select one with --persona NAMESPACE/NAME", name, personaNames(found))
	}
	switch {
	case len(all) == 0:
		return nil, failed("the manifests hold no Persona")
	case len(all) == 1:
		return all[0], nil
	}
	return nil, usageError("the manifests hold %d personas: %s; select one with --persona NAME", len(all), personaNames(all))
}

// personaNames lists personas by name, qualified with the namespace when
// they are in several.
func personaNames(ps []*manifest.Object) string {
	qualify := false
	for _, p := range ps {
		if p.Namespace != ps[0].Namespace {
			qualify = true
		}
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
		if qualify {
			names[i] = p.Namespace + "/" + p.Name
		}
	}
	return strings.Join(names, ", ")
}

// renderFailure is the one-line message of a failed render: a RenderError
// names the persona itself (personas.md#conditions RenderFailed); anything else is
// prefixed with the persona.
func renderFailure(b *render.Bundle, err error) string {
	var re *render.RenderError
	if errors.As(err, &re) {
		return oneLine(err.Error())
	}
	msg := err.Error()
	if prefix := fmt.Sprintf("persona %q", b.Persona.Name); !strings.HasPrefix(msg, prefix) {
		msg = prefix + ": " + msg
	}
	return oneLine(msg)
}

// render renders b in the output format; guardrails is the identity of its
// ClusterPromptLayers, which the ConfigMap is annotated with.
func (o *renderOptions) render(b *render.Bundle, guardrails string) ([]byte, error) {
	switch o.output {
	case outputBundle:
		return render.MarshalBundle(b)
	case outputConfigMap:
		out, err := render.Default().ConfigMap(b)
		if err != nil {
			return nil, err
		}
		cm := delivery.ConfigMap(b.Persona.Name, b.Persona.Namespace, out)
		delivery.SetGuardrails(cm, guardrails)
		return configMapYAML(cm)
	case outputPersona:
		// The key as the operator writes it, so it fails where the
		// operator would write no ConfigMap at all.
		out, err := render.Default().ConfigMap(b)
		if err != nil {
			return nil, err
		}
		return []byte(out.Data[render.PersonaKey]), nil
	}
	p, err := render.Default().Render(b, o.variant)
	if err != nil {
		return nil, err
	}
	return []byte(p.Text), nil
}

// configMapYAML prints a ConfigMap as kubectl does, without the
// creationTimestamp: null of an object never stored.
func configMapYAML(cm any) ([]byte, error) {
	raw, err := json.Marshal(cm)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return yaml.Marshal(m)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
