package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/image"
	"github.com/persona-operator/persona-operator/internal/inject"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/agents/modelstub"
)

// The real-harness check: the sample agent's pod template running the Codex
// CLI, as the sample's comment shows, through kubectl-persona launch, one
// session after another, against a model stub in the suite's network
// namespace.
const (
	codexAgents    = "codex-agent"
	codexContainer = "codex"
	// codexTask is every session's task.
	codexTask = "Review the open pull request."
	// sessionPause is the time between two sessions of the pod's agent.
	sessionPause = time.Second
	// maxHarnessEdits bounds the edits the check measures: each waits for a
	// session of the real harness.
	maxHarnessEdits = 10
	// editToRequestBound is how long an edit may take to reach a model
	// request: the kubelet's sync (at most 1.5 syncFrequency) and a session.
	editToRequestBound = 90 * time.Second
)

// codexBinary is the Codex CLI's static binary that hack/agent-clis.sh
// installed from the npm registry (PERSONA_AGENT_CLIS): the platform
// package of @openai/codex, whose Node.js wrapper executes it. It returns
// the binary and Codex's version.
func codexBinary() (path, version string, err error) {
	clis := os.Getenv("PERSONA_AGENT_CLIS")
	if clis == "" {
		return "", "", errors.New("PERSONA_AGENT_CLIS is not set (the directory `hack/agent-clis.sh codex` prints): run make test-e2e")
	}
	// <node_modules>/@openai/codex/bin/codex.js
	wrapper, err := filepath.EvalSymlinks(filepath.Join(clis, "codex"))
	if err != nil {
		return "", "", fmt.Errorf("the Codex CLI of PERSONA_AGENT_CLIS=%s: %w", clis, err)
	}
	modules := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(wrapper))))
	platform, ok := map[string][2]string{
		"amd64": {"codex-linux-x64", "x86_64-unknown-linux-musl"},
		"arm64": {"codex-linux-arm64", "aarch64-unknown-linux-musl"},
	}[runtime.GOARCH]
	if !ok {
		return "", "", fmt.Errorf("no Codex package for linux/%s", runtime.GOARCH)
	}
	vendor := filepath.Join(modules, "@openai", platform[0], "vendor", platform[1])
	// The package says where its binary is.
	raw, err := os.ReadFile(filepath.Join(vendor, "codex-package.json"))
	if err != nil {
		return "", "", fmt.Errorf("the Codex package for linux/%s (%s's optional dependency @openai/%s): %w", runtime.GOARCH, wrapper, platform[0], err)
	}
	var pkg struct {
		Version    string `json:"version"`
		Entrypoint string `json:"entrypoint"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil || pkg.Entrypoint == "" {
		return "", "", fmt.Errorf("%s names no entrypoint (%v)", filepath.Join(vendor, "codex-package.json"), err)
	}
	path = filepath.Join(vendor, pkg.Entrypoint)
	// The image holds nothing beside it.
	if err := image.RequireStatic(path); err != nil {
		return "", "", err
	}
	return path, pkg.Version, nil
}

// importCodexImage builds the Codex agent's image and imports it into the
// node's containerd; it returns Codex's version.
func (s *suite) importCodexImage() (string, error) {
	codex, version, err := codexBinary()
	if err != nil {
		return "", err
	}
	archive, err := writeCodexImage(s.bin, codex, s.work)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", codexImage, err)
	}
	defer os.Remove(archive)
	if _, err := run(2*time.Minute, "ctr", "--address", s.node.socket, "-n", "k8s.io", "images", "import", archive); err != nil {
		return "", fmt.Errorf("import the image %s into containerd: %w", codexImage, err)
	}
	return version, nil
}

// codexDeployment is the sample agent Deployment's pod template with its
// agent running Codex through kubectl-persona launch, a session at a time,
// as the sample's comment shows, with the live delivery: each session reads
// the ConfigMap persona-reviewer as the kubelet last synced it. Codex's
// provider is the model stub at stubURL; its own traffic (update checks,
// analytics, plugins) is off, and anything else it sends goes to the stub
// as its proxy, which records and refuses it.
func (s *suite) codexDeployment(t *testing.T, stubURL string) *appsv1.Deployment {
	t.Helper()
	template := s.sampleTemplate(t)
	var agent *corev1.Container
	for i := range template.Spec.Containers {
		if c := &template.Spec.Containers[i]; c.Name == mainAgent {
			agent = c
		}
	}
	if agent == nil {
		t.Fatalf("the sample Deployment has no container %s", mainAgent)
	}
	template.Labels[agentLabel] = codexAgents
	template.Annotations = map[string]string{inject.DeliveryAnnotation: inject.DeliveryLive}
	stubHost := strings.TrimPrefix(stubURL, "http://")
	stubHost = stubHost[:strings.LastIndex(stubHost, ":")]
	env := []corev1.EnvVar{{Name: "HOME", Value: "/home/agent"}, {Name: "TASK", Value: codexTask}, {Name: "NO_PROXY", Value: stubHost}, {Name: "no_proxy", Value: stubHost}}
	for _, v := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"} {
		env = append(env, corev1.EnvVar{Name: v, Value: stubURL})
	}
	command := []string{"/usr/local/bin/sessions", "--pause=" + sessionPause.String(), "--", "kubectl-persona", "launch", "--", "codex"}
	for _, setting := range []string{
		`model_provider="stub"`,
		`model_providers.stub={name="stub", base_url="` + stubURL + `/v1", wire_api="responses"}`,
		"check_for_update_on_startup=false",
		"analytics.enabled=false",
		"feedback.enabled=false",
		"features.plugins=false",
		"features.remote_plugin=false",
		"features.in_app_updates=false",
	} {
		command = append(command, "-c", setting)
	}
	command = append(command, "exec", "--skip-git-repo-check", "$(TASK)")
	template.Spec.Containers = []corev1.Container{{
		Name:            codexContainer,
		Image:           codexImage,
		ImagePullPolicy: corev1.PullNever,
		Command:         command,
		WorkingDir:      "/workspace",
		Env:             env,
		SecurityContext: agent.SecurityContext.DeepCopy(),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			// Codex holds about 160 MiB.
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "home", MountPath: "/home/agent"}, {Name: "workspace", MountPath: "/workspace"}},
	}}
	template.Spec.Volumes = []corev1.Volume{
		{Name: "home", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: codexAgents, Labels: map[string]string{agentLabel: codexAgents}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{agentLabel: codexAgents}},
			Template: *template,
		},
	}
}

// modelRequest is what one request of Codex's (the OpenAI Responses API)
// gave the model.
type modelRequest struct {
	at            time.Time
	model, effort string
	// instructions are the request's instructions, then the texts of its
	// developer and system messages, in order.
	instructions []string
}

func readModelRequest(r modelstub.Request) (modelRequest, error) {
	body, err := modelstub.ReadResponses(r.Body)
	if err != nil {
		return modelRequest{}, fmt.Errorf("the request %s %s at %s: %w", r.Method, r.Path, r.At.Format(time.TimeOnly), err)
	}
	return modelRequest{at: r.At, model: body.Model, effort: body.Effort, instructions: body.Instructions}, nil
}

// holds says whether the request's instructions hold text.
func (m modelRequest) holds(text string) bool {
	return strings.Contains(strings.Join(m.instructions, "\n\n"), text)
}

// modelRequests are the stub's model requests received at or after since;
// a request that tried to leave the machine through it is an error.
func modelRequests(stub *modelstub.Server, since time.Time) ([]modelRequest, error) {
	var out []modelRequest
	for _, r := range stub.Requests() {
		if r.Host != "" {
			return nil, fmt.Errorf("Codex tried to leave the machine: %s %s at %s", r.Method, r.Host, r.At.Format(time.TimeOnly))
		}
		if r.At.Before(since) || r.Method != "POST" || !strings.HasSuffix(r.Path, "/responses") {
			continue
		}
		m, err := readModelRequest(r)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// waitModelRequest waits for the first model request since after whose
// instructions hold marker.
func waitModelRequest(stub *modelstub.Server, after time.Time, marker string, timeout time.Duration) (modelRequest, error) {
	var found modelRequest
	var failed error
	err := waitFor(timeout, "a model request whose instructions hold "+marker, func() (bool, error) {
		reqs, err := modelRequests(stub, after)
		if err != nil {
			failed = err
			return true, nil
		}
		for _, r := range reqs {
			if r.holds(marker) {
				found = r
				return true, nil
			}
		}
		return false, fmt.Errorf("%d model requests since %s, none with it", len(reqs), after.Format(time.TimeOnly))
	})
	return found, errors.Join(err, failed)
}

// systemPromptText is system-prompt.md of the persona's live ConfigMap.
func (s *suite) systemPromptText() (string, error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: delivery.ConfigMapName(persona)}, &cm); err != nil {
		return "", err
	}
	return cm.Data[render.SystemPromptKey], nil
}

// keepsHarnessPrompt says whether the persona's live bundle.json asks the
// harness to keep its own instructions (harnessPrompt keep, the default) or
// to replace them with the prompt.
func (s *suite) keepsHarnessPrompt() (bool, error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: delivery.ConfigMapName(persona)}, &cm); err != nil {
		return false, err
	}
	b, err := render.UnmarshalBundle([]byte(cm.Data[render.BundleKey]))
	if err != nil {
		return false, fmt.Errorf("%s of ConfigMap %s: %w", render.BundleKey, cm.Name, err)
	}
	return b.Persona.HarnessPrompt != "replace", nil
}

// receivesPersona says what is wrong with what a model request gave the
// model: the system prompt, verbatim, as one of its instructions, after
// Codex's own (keep) or first (replace); the Persona's model and, when it
// sets one, its reasoning effort.
func receivesPersona(r modelRequest, prompt string, keep bool, spec *v1alpha1.PersonaSpec) []string {
	var problems []string
	at := -1
	for i, text := range r.instructions {
		if text == prompt || text == strings.TrimSuffix(prompt, "\n") {
			at = i
		}
	}
	switch {
	case at < 0:
		problems = append(problems, fmt.Sprintf("none of its %d instructions is system-prompt.md of the ConfigMap (%d bytes) verbatim", len(r.instructions), len(prompt)))
	case keep && at == 0:
		problems = append(problems, "system-prompt.md comes first: Codex's own instructions, which harnessPrompt keep keeps, are not before it")
	case !keep && at > 0:
		problems = append(problems, fmt.Sprintf("system-prompt.md is instruction %d: harnessPrompt replace puts it in place of Codex's own, first", at+1))
	}
	if r.model != *spec.Model {
		problems = append(problems, fmt.Sprintf("model %q, want the Persona's %q", r.model, *spec.Model))
	}
	if spec.ReasoningEffort != nil && r.effort != *spec.ReasoningEffort {
		problems = append(problems, fmt.Sprintf("reasoning effort %q, want the Persona's %q", r.effort, *spec.ReasoningEffort))
	}
	return problems
}

// realHarnessGetsEachEdit runs the sample agent with the real Codex CLI, a
// session after another in one pod with the live delivery, and measures how
// long each edit of the Persona's prompt takes to reach the model: from the
// API write to the first model request whose instructions hold the edit's
// marker. Each such request must carry the ConfigMap's system-prompt.md
// verbatim and the Persona's model, as make test-agents checks off the node.
func (s *suite) realHarnessGetsEachEdit(t *testing.T) {
	start := time.Now()
	version, err := s.importCodexImage()
	if err != nil {
		if os.Getenv("PERSONA_REQUIRE_E2E") != "1" && os.Getenv("PERSONA_AGENT_CLIS") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	imported := time.Since(start)
	// The API server's address, on the suite's namespace's loopback, is
	// where pods reach the namespace itself, through the bridge's gateway.
	stub, err := modelstub.StartOn(apiServerAddress + ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stub.Close() }()

	var p v1alpha1.Persona
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: persona}, &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Model == nil || *p.Spec.Model == "" {
		t.Fatalf("persona %s sets no model: the check compares the model requests' with it", persona)
	}
	saved := p.Spec.DeepCopy()

	d := s.codexDeployment(t, stub.URL)
	created := time.Now()
	if err := s.c.Create(s.ctx, d); err != nil {
		t.Fatal(err)
	}
	defer s.removeCodexAgent(t)
	defer func() {
		if t.Failed() {
			t.Logf("the Codex agent's log:\n%s", s.node.containerLogTails(namespace, codexContainer, 8<<10))
		}
	}()
	prompt, err := s.systemPromptText()
	if err != nil {
		t.Fatal(err)
	}
	keep, err := s.keepsHarnessPrompt()
	if err != nil {
		t.Fatal(err)
	}
	// The first session's request: the prompt as it is, before any edit.
	first, err := waitModelRequest(stub, created, strings.TrimSuffix(prompt, "\n"), 2*time.Minute)
	if err != nil {
		t.Fatalf("the Codex agent's first session: %v", err)
	}
	if problems := receivesPersona(first, prompt, keep, &p.Spec); len(problems) > 0 {
		t.Fatalf("the first session's model request: %s", strings.Join(problems, "; "))
	}
	place := "after Codex's own (harnessPrompt keep)"
	if !keep {
		place = "in place of Codex's own (harnessPrompt replace)"
	}
	t.Logf("Codex %s (image built and imported in %s) sent its first model request %s after the Deployment's create, with system-prompt.md verbatim among %d instructions, %s, and model %s",
		version, imported.Round(100*time.Millisecond), first.at.Sub(created).Round(100*time.Millisecond), len(first.instructions), place, first.model)

	restore := func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(&p), &p); err != nil {
				return err
			}
			p.Spec.Prompt = saved.Prompt
			return s.c.Update(s.ctx, &p)
		})
		if err != nil {
			t.Errorf("restore persona %s's prompt: %v", persona, err)
		}
	}
	defer restore()

	edits := min(editCount(t), maxHarnessEdits)
	var toConfigMap, toRequest []time.Duration
	for n := 1; n <= edits; n++ {
		leaveTimeForCleanup(t, 2*editToRequestBound)
		// As in EditsReachTheRunningPod: edits come at any point of the
		// kubelet's sync period.
		time.Sleep(rand.N(syncFrequency))
		marker := fmt.Sprintf("REVIEW-EDIT-%02d", n)
		edited := time.Now()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(&p), &p); err != nil {
				return err
			}
			p.Spec.Prompt = saved.Prompt + fmt.Sprintf("Tag each finding with %s.\n", marker)
			return s.c.Update(s.ctx, &p)
		})
		if err != nil {
			t.Fatalf("edit persona %s: %v", persona, err)
		}
		var prompt string
		if err := waitForEvery(10*time.Millisecond, 30*time.Second, "the operator rendering "+marker, func() (bool, error) {
			var err error
			prompt, err = s.systemPromptText()
			return err == nil && strings.Contains(prompt, marker), err
		}); err != nil {
			t.Fatal(err)
		}
		cm := time.Since(edited)
		r, err := waitModelRequest(stub, edited, marker, editToRequestBound)
		if err != nil {
			t.Fatalf("edit %d: %v", n, err)
		}
		if problems := receivesPersona(r, prompt, keep, &p.Spec); len(problems) > 0 {
			t.Fatalf("edit %d, the first model request with %s: %s", n, marker, strings.Join(problems, "; "))
		}
		toConfigMap, toRequest = append(toConfigMap, cm), append(toRequest, r.at.Sub(edited))
		t.Logf("edit %2d of persona %s's prompt: in the ConfigMap after %s, in a model request after %s",
			n, persona, cm.Round(time.Millisecond), r.at.Sub(edited).Round(time.Millisecond))
	}
	sessions, took, failed, err := s.node.sessions(namespace, codexContainer)
	if err != nil {
		t.Fatal(err)
	}
	if failed > 0 {
		t.Errorf("%d of %d sessions of Codex failed", failed, len(sessions))
	}
	reqs, err := modelRequests(stub, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("edit -> model request of the real harness over %d edits: p50 %s, p90 %s, max %s (edit -> ConfigMap: p50 %s, p90 %s); Codex %s through kubectl-persona launch with the live delivery, %d sessions (p50 %s each, %s between them), %d model requests, none leaving; kubelet syncFrequency %s",
		len(toRequest), percentile(toRequest, 50), percentile(toRequest, 90), percentile(toRequest, 100), percentile(toConfigMap, 50), percentile(toConfigMap, 90),
		version, len(sessions), percentile(took, 50), sessionPause, len(reqs), syncFrequency)
}

// removeCodexAgent deletes the Codex agent's Deployment and waits for its
// pod to be gone, so that the later checks have the node to themselves.
func (s *suite) removeCodexAgent(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: codexAgents}}
	if err := s.c.Delete(s.ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
		return
	}
	if err := waitFor(time.Minute, "the Codex agent's pod gone", func() (bool, error) {
		var pods corev1.PodList
		if err := s.c.List(s.ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{agentLabel: codexAgents}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d pods", len(pods.Items))
	}); err != nil {
		t.Error(err)
	}
}
