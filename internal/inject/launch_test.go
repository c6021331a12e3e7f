package inject

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/persona-operator/persona-operator/internal/render"
)

// The launch variables go, after the others, to each container that got
// the prompt, from the settings of the snapshot's prompt the pod reads; an
// empty value is set empty, and any the pod set itself go first.
func TestSnapshotLaunchVariables(t *testing.T) {
	pod := agentPod(map[string]string{"prompts.persona-operator.dev/variant": "short", "prompts.persona-operator.dev/containers": "agent"})
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "PERSONA_MODEL", Value: "forged"})
	res, errs := Pod(pod, reviewer(), Config{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if res.Revision != 3 || res.Variant != "short" {
		t.Fatalf("result %+v, want revision 3 of variant short", res)
	}
	res.SetLaunch(render.Launch{Harness: "codex", Model: "gpt-5.1-codex", HarnessPrompt: "replace"})
	want := []corev1.EnvVar{
		{Name: "HOME", Value: "/home"},
		{Name: "PERSONA_NAME", Value: "reviewer"},
		{Name: "PERSONA_PROMPT_FILE", Value: "/etc/persona/system-prompt.short.md"},
		{Name: "PERSONA_BUNDLE_FILE", Value: "/etc/persona/bundle.json"},
		{Name: "PERSONA_REVISION", Value: "3"},
		{Name: "PERSONA_HARNESS", Value: "codex"},
		{Name: "PERSONA_MODEL", Value: "gpt-5.1-codex"},
		{Name: "PERSONA_REASONING_EFFORT", Value: ""},
		{Name: "PERSONA_HARNESS_PROMPT", Value: "replace"},
	}
	if got := pod.Spec.Containers[0].Env; !reflect.DeepEqual(got, want) {
		t.Errorf("agent env\n%+v\nwant\n%+v", got, want)
	}
	if got := pod.Spec.Containers[1].Env; got != nil {
		t.Errorf("the sidecar, which did not get the prompt, got env %+v", got)
	}

	// Sent again (reinvocation) and given the same settings, nothing changes.
	once := pod.DeepCopy()
	again, errs := Pod(pod, reviewer(), Config{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	again.SetLaunch(render.Launch{Harness: "codex", Model: "gpt-5.1-codex", HarnessPrompt: "replace"})
	if !reflect.DeepEqual(pod, once) {
		t.Errorf("reinvocation changed the pod:\n%+v\nto\n%+v", once.Spec.Containers[0].Env, pod.Spec.Containers[0].Env)
	}
}

// A live mount's values change under the pod, so it gets no launch
// variables, and those the pod set itself go: the launcher reads them from
// bundle.json.
func TestLiveMountGetsNoLaunchVariables(t *testing.T) {
	pod := agentPod(map[string]string{"prompts.persona-operator.dev/delivery": "live"})
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "PERSONA_HARNESS", Value: "claude"})
	res, errs := Pod(pod, reviewer(), Config{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	res.SetLaunch(render.Launch{Harness: "codex", HarnessPrompt: "keep"})
	want := []corev1.EnvVar{
		{Name: "HOME", Value: "/home"},
		{Name: "PERSONA_NAME", Value: "reviewer"},
		{Name: "PERSONA_PROMPT_FILE", Value: "/etc/persona/system-prompt.md"},
		{Name: "PERSONA_BUNDLE_FILE", Value: "/etc/persona/bundle.json"},
	}
	if got := pod.Spec.Containers[0].Env; !reflect.DeepEqual(got, want) {
		t.Errorf("agent env\n%+v\nwant\n%+v", got, want)
	}
}

// A container that gets the prompt and reads variables from a ConfigMap or
// Secret (envFrom) gets those of the webhook's it sets no value of (a live
// mount's revision and launch settings) set empty, which wins over envFrom.
func TestEnvFromSetsNoneOfTheWebhooksVariables(t *testing.T) {
	pod := agentPod(map[string]string{"prompts.persona-operator.dev/delivery": "live"})
	pod.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "PERSONA_",
		ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "tenant-env"}}}}
	if _, errs := Pod(pod, reviewer(), Config{}); len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []corev1.EnvVar{
		{Name: "HOME", Value: "/home"},
		{Name: "PERSONA_NAME", Value: "reviewer"},
		{Name: "PERSONA_PROMPT_FILE", Value: "/etc/persona/system-prompt.md"},
		{Name: "PERSONA_BUNDLE_FILE", Value: "/etc/persona/bundle.json"},
		{Name: "PERSONA_REVISION"},
		{Name: "PERSONA_HARNESS"},
		{Name: "PERSONA_MODEL"},
		{Name: "PERSONA_REASONING_EFFORT"},
		{Name: "PERSONA_HARNESS_PROMPT"},
	}
	if got := pod.Spec.Containers[0].Env; !reflect.DeepEqual(got, want) {
		t.Errorf("agent env\n%+v\nwant\n%+v", got, want)
	}
	// Called again on its own output, nothing changes.
	again := pod.DeepCopy()
	if _, errs := Pod(again, reviewer(), Config{}); len(errs) > 0 || !reflect.DeepEqual(again, pod) {
		t.Errorf("reinvocation changed the pod: %v", errs)
	}
}
