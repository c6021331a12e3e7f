package cli

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The validate line that docs/cli.md and the README show for the samples is
// the one validate prints for them.
func TestDocsShowValidateOfTheSamples(t *testing.T) {
	r := run(t, "", "validate", "-f", "../../config/samples")
	if r.code != ExitOK {
		t.Fatalf("the samples do not validate: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := strings.TrimSuffix(r.stdout, "\n")

	cli, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("\\$ kubectl persona validate -f config/samples\n(.*)\n").FindSubmatch(cli)
	if m == nil || string(m[1]) != got {
		t.Errorf("docs/cli.md shows %q for the samples; validate prints %q", m, got)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`"+got+"`") {
		t.Errorf("README.md does not show %q", got)
	}
}

// personas.md's example shows what the operator renders for the samples
// (the parity specs prove the CLI renders the same), on the sample
// PromptPlatform and without a guardrail, since the namespace default
// carries no label: each Persona's bytes in the kubectl get table, the
// reviewer's bytes and hash in its status and Events, and its prompt.
func TestPersonasDocShowsTheSamples(t *testing.T) {
	raw, err := os.ReadFile("../../docs/spec/v1alpha1/personas.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	rendered := func(persona string) (bytes int, hash string) {
		t.Helper()
		r := run(t, "", "render", "-f", "../../config/samples", "--persona", persona, "-o", "configmap")
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(r.stdout), &cm); r.code != ExitOK || err != nil {
			t.Fatalf("render %s: exit %d, %v\n%s", persona, r.code, err, r.stderr)
		}
		for k, v := range cm.Data {
			bytes += len(k) + len(v)
		}
		return bytes, cm.Annotations["prompts.persona-operator.dev/content-hash"]
	}

	rows := regexp.MustCompile(`(?m)^   ([a-z-]+) +True +Rendered +persona-[a-z-]+ +(\d+) +1 `).FindAllStringSubmatch(doc, -1)
	var shown []string
	for _, row := range rows {
		shown = append(shown, row[1])
		if bytes, _ := rendered(row[1]); row[2] != strconv.Itoa(bytes) {
			t.Errorf("personas.md shows %s bytes for %s; the operator renders %d", row[2], row[1], bytes)
		}
	}
	if want := []string{"agentic", "bare-prompt", "base", "bench-lean", "model-aware-reviewer", "reviewer"}; !slices.Equal(shown, want) {
		t.Errorf("the kubectl get table shows %v, want the samples' Personas %v", shown, want)
	}

	bytes, hash := rendered("reviewer")
	for _, m := range regexp.MustCompile(`sha256:[0-9a-f]{64}`).FindAllString(doc, -1) {
		if m != hash {
			t.Errorf("personas.md shows the reviewer's hash as %s; the operator renders %s", m, hash)
		}
	}
	sizes := regexp.MustCompile(`persona-reviewer holds the render: (\d+) bytes|\((\d+) bytes\) into ConfigMap persona-reviewer`).FindAllStringSubmatch(doc, -1)
	if len(sizes) != 2 {
		t.Errorf("personas.md shows the reviewer's size %d times, want 2 (its Ready message and its Event)", len(sizes))
	}
	for _, m := range sizes {
		if shown := m[1] + m[2]; shown != strconv.Itoa(bytes) {
			t.Errorf("personas.md shows the reviewer's size as %s bytes; the operator renders %d", shown, bytes)
		}
	}

	block := regexp.MustCompile("(?s)Read the system prompt the agent gets:.*?   ```markdown\n(.*?)   ```\n").FindStringSubmatch(doc)
	if block == nil {
		t.Fatal("personas.md shows no prompt of the reviewer")
	}
	var want strings.Builder
	for _, line := range strings.SplitAfter(block[1], "\n") {
		want.WriteString(strings.TrimPrefix(line, "   "))
	}
	prompt := run(t, "", "render", "-f", "../../config/samples", "--persona", "reviewer")
	if prompt.code != ExitOK || prompt.stdout != want.String() {
		t.Errorf("personas.md shows the reviewer's prompt as\n%s\nthe operator renders\n%s", want.String(), prompt.stdout)
	}
}
