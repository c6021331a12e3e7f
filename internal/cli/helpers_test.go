package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/test/fixtures"
)

// result is what one command line did.
type result struct {
	code           int
	stdout, stderr string
}

// run runs kubectl-persona in-process with stdin. Its stderr leaves out the
// warning that the manifests hold no PromptPlatform, which nearly every
// test's manifests would get (TestOfflineInputWarnings checks it); rawRun
// keeps it.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := rawRun(stdin, args...)
	var kept []string
	for _, line := range strings.SplitAfter(r.stderr, "\n") {
		if !strings.HasPrefix(line, noPlatformWarning) {
			kept = append(kept, line)
		}
	}
	r.stderr = strings.Join(kept, "")
	return r
}

const noPlatformWarning = "Warning: the manifests hold no PromptPlatform"

func rawRun(stdin string, args ...string) result {
	var out, errOut bytes.Buffer
	code := Run(args, strings.NewReader(stdin), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// expect checks the exit status and the exact standard output.
func (r result) expect(t *testing.T, code int, stdout string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit status = %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	if r.stdout != stdout {
		t.Errorf("stdout =\n%q\nwant\n%q\nstderr:\n%s", r.stdout, stdout, r.stderr)
	}
}

var removeAll = fixtures.RemoveAllSections

// persona is a Persona manifest; spec is indented by two spaces and may use
// systemPrompt with removeAll.
func persona(name, spec string) string {
	return "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata:\n  name: " + name + "\nspec:\n" + spec + "\n"
}

// barePersona is a Persona that removes every platform section and has the
// extensions given as id, template pairs, plus extra spec lines.
func barePersona(name string, extra string, exts ...string) string {
	var b strings.Builder
	b.WriteString(extra)
	b.WriteString("  systemPrompt:" + removeAll + "\n")
	if len(exts) > 0 {
		b.WriteString("    extensions:\n")
		for i := 0; i < len(exts); i += 2 {
			b.WriteString("    - id: " + exts[i] + "\n      template: " + fixtures.Quote(exts[i+1]) + "\n")
		}
	}
	return persona(name, strings.TrimRight(b.String(), "\n"))
}

// layer is a PromptLayer manifest.
func layer(name, source, mode, template string) string {
	s := "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata:\n  name: " + name + "\nspec:\n"
	if source != "" {
		s += "  source: " + source + "\n"
	}
	if mode != "" {
		s += "  mode: " + mode + "\n"
	}
	if template != "" || mode != "disable" {
		s += "  template: " + fixtures.Quote(template) + "\n"
	}
	return s
}

// guardrail is a ClusterPromptLayer manifest selecting the namespaces
// labelled nsLabel (a "key: value" flow entry).
func guardrail(name, position, template, nsLabel string) string {
	return "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: ClusterPromptLayer\nmetadata:\n  name: " + name +
		"\nspec:\n  position: " + position + "\n  template: " + fixtures.Quote(template) +
		"\n  namespaceSelector: {matchLabels: {" + nsLabel + "}}\n"
}

// namespace is a Namespace manifest with the labels of a flow mapping's entries.
func namespace(name, labels string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n  labels: {" + labels + "}\n"
}

// docs joins manifests into one multi-document YAML file.
func docs(manifests ...string) string { return strings.Join(manifests, "---\n") }
