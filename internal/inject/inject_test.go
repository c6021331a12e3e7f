package inject

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// agentPod is a pod of persona reviewer with two containers.
func agentPod(annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Labels: map[string]string{"prompts.persona-operator.dev/persona": "reviewer", "app": "agent"}, Annotations: annotations},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup"}},
			Containers: []corev1.Container{
				{Name: "agent", Env: []corev1.EnvVar{{Name: "PERSONA_NAME", Value: "forged"}, {Name: "HOME", Value: "/home"}}},
				{Name: "sidecar", VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/etc/personal"}}},
			},
			Volumes: []corev1.Volume{{Name: "cache"}},
		},
	}
}

// platform lets pods choose other mount paths than the default.
var platform = Config{MountPaths: []string{DefaultMountPath, "/prompt", "/var/prompt", "/etc"}}

// reviewer has revisions 1 to 3; revision 1 predates a guardrail (g1, the
// others g2), and a variant "short".
func reviewer() *Persona {
	return &Persona{Variants: []string{"short"}, CurrentRevision: 3, Snapshots: map[int64]string{1: "g1", 2: "g2", 3: "g2"}}
}

func TestSnapshotInjection(t *testing.T) {
	pod := agentPod(nil)
	res, errs := Pod(pod, reviewer(), Config{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !res.Changed || res.Revision != 3 {
		t.Fatalf("result = %+v, want changed, revision 3", res)
	}
	wantVolume := corev1.Volume{Name: "persona-prompt", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "persona-reviewer.r3"}}}}
	if len(pod.Spec.Volumes) != 2 || !reflect.DeepEqual(pod.Spec.Volumes[1], wantVolume) {
		t.Errorf("volumes = %+v, want cache and %+v", pod.Spec.Volumes, wantVolume)
	}
	wantMount := corev1.VolumeMount{Name: "persona-prompt", MountPath: "/etc/persona", ReadOnly: true}
	wantEnv := []corev1.EnvVar{
		{Name: "PERSONA_NAME", Value: "reviewer"},
		{Name: "PERSONA_PROMPT_FILE", Value: "/etc/persona/system-prompt.md"},
		{Name: "PERSONA_BUNDLE_FILE", Value: "/etc/persona/bundle.json"},
		{Name: "PERSONA_REVISION", Value: "3"},
	}
	agent, sidecar := pod.Spec.Containers[0], pod.Spec.Containers[1]
	if !reflect.DeepEqual(agent.VolumeMounts, []corev1.VolumeMount{wantMount}) {
		t.Errorf("agent mounts = %+v", agent.VolumeMounts)
	}
	// The pod's own PERSONA_NAME is overwritten; HOME stays.
	if want := append([]corev1.EnvVar{{Name: "HOME", Value: "/home"}}, wantEnv...); !reflect.DeepEqual(agent.Env, want) {
		t.Errorf("agent env = %+v, want %+v", agent.Env, want)
	}
	// /etc/personal is not under /etc/persona.
	if !reflect.DeepEqual(sidecar.VolumeMounts, []corev1.VolumeMount{{Name: "cache", MountPath: "/etc/personal"}, wantMount}) || !reflect.DeepEqual(sidecar.Env, wantEnv) {
		t.Errorf("sidecar = %+v", sidecar)
	}
	if len(pod.Spec.InitContainers[0].VolumeMounts) != 0 {
		t.Error("an init container got the mount without being named")
	}
	if pod.Labels["prompts.persona-operator.dev/revision"] != "3" || pod.Annotations["prompts.persona-operator.dev/revision"] != "3" {
		t.Errorf("labels %v, annotations %v: want revision 3 in both", pod.Labels, pod.Annotations)
	}
}

func TestReinvocationChangesNothing(t *testing.T) {
	for _, annotations := range []map[string]string{nil, {"prompts.persona-operator.dev/delivery": "live"}, {"prompts.persona-operator.dev/mount-path": "/prompt", "prompts.persona-operator.dev/variant": "short"}} {
		pod := agentPod(annotations)
		first, errs := Pod(pod, reviewer(), platform)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		once := pod.DeepCopy()
		// A new revision meanwhile does not move the pod: its choice stands.
		later := reviewer()
		later.CurrentRevision, later.Snapshots[4] = 4, "g2"
		res, errs := Pod(pod, later, platform)
		if len(errs) > 0 || !reflect.DeepEqual(pod, once) {
			t.Errorf("%v: reinvocation gave %v and changed the pod:\n%+v\nto\n%+v", annotations, errs, once, pod)
		}
		if res.Revision != first.Revision {
			t.Errorf("%v: reinvocation reports revision %d, the first invocation %d", annotations, res.Revision, first.Revision)
		}
	}
}

func TestReinvocationMountsAContainerAddedSince(t *testing.T) {
	pod := agentPod(nil)
	if _, errs := Pod(pod, reviewer(), Config{}); len(errs) > 0 {
		t.Fatal(errs)
	}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "added"})
	if _, errs := Pod(pod, reviewer(), Config{}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(pod.Spec.Volumes) != 2 {
		t.Errorf("volumes = %+v, want one prompt volume", pod.Spec.Volumes)
	}
	if added := pod.Spec.Containers[2]; len(added.VolumeMounts) != 1 || len(added.Env) != 4 {
		t.Errorf("the container added since = %+v", added)
	}
}

// A pod that comes with the webhook's volume written by hand, naming a
// revision that predates a guardrail, gets the current revision: the
// reinvocation rule is no way around the guardrails.
func TestForgedVolumeGetsNoOlderGuardrails(t *testing.T) {
	for _, annotations := range []map[string]string{nil, {"prompts.persona-operator.dev/delivery": "live"}} {
		pod := agentPod(annotations)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "persona-prompt", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "persona-reviewer.r1"}}}})
		res, errs := Pod(pod, reviewer(), Config{})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		want, revision := "persona-reviewer.r3", int64(3)
		if annotations != nil {
			want, revision = "persona-reviewer", 0
		}
		if got := pod.Spec.Volumes[1].ConfigMap.Name; got != want || res.Revision != revision || len(pod.Spec.Volumes) != 2 {
			t.Errorf("%v: volume of %s, revision %d; want %s, %d", annotations, got, res.Revision, want, revision)
		}
	}
	// Revision 2 has the current guardrails: it stands.
	pod := agentPod(nil)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "persona-prompt", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "persona-reviewer.r2"}}}})
	if res, _ := Pod(pod, reviewer(), Config{}); res.Revision != 2 {
		t.Errorf("revision %d, want 2", res.Revision)
	}
}

func TestRevisionChoice(t *testing.T) {
	for _, tc := range []struct {
		name        string
		persona     *Persona
		annotations map[string]string
		configMap   string
		revision    int64
	}{
		{"current", reviewer(), nil, "persona-reviewer.r3", 3},
		{"the template's revision", reviewer(), map[string]string{"prompts.persona-operator.dev/revision": "2"}, "persona-reviewer.r2", 2},
		{"a revision predating a guardrail gets the current one", reviewer(), map[string]string{"prompts.persona-operator.dev/revision": "1"}, "persona-reviewer.r3", 3},
		{"a pruned revision gets the current one", reviewer(), map[string]string{"prompts.persona-operator.dev/revision": "7"}, "persona-reviewer.r3", 3},
		{"no Persona: live", nil, map[string]string{"prompts.persona-operator.dev/revision": "2"}, "persona-reviewer", 0},
		{"no revision yet: live", &Persona{}, nil, "persona-reviewer", 0},
		{"current snapshot not cached: live", &Persona{CurrentRevision: 3, Snapshots: map[int64]string{2: ""}}, nil, "persona-reviewer", 0},
		{"delivery live", reviewer(), map[string]string{"prompts.persona-operator.dev/delivery": "live", "prompts.persona-operator.dev/revision": "2"}, "persona-reviewer", 0},
		{"delivery snapshot", reviewer(), map[string]string{"prompts.persona-operator.dev/delivery": "snapshot"}, "persona-reviewer.r3", 3},
		{"no guardrails then and now", &Persona{CurrentRevision: 2, Snapshots: map[int64]string{1: "", 2: ""}}, map[string]string{"prompts.persona-operator.dev/revision": "1"}, "persona-reviewer.r1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := agentPod(tc.annotations)
			pod.Labels["prompts.persona-operator.dev/revision"] = "2" // copied from a template
			res, errs := Pod(pod, tc.persona, Config{})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := pod.Spec.Volumes[1].ConfigMap.Name; got != tc.configMap || res.Revision != tc.revision {
				t.Errorf("volume of %s, revision %d; want %s, %d", got, res.Revision, tc.configMap, tc.revision)
			}
			env := map[string]string{}
			for _, e := range pod.Spec.Containers[0].Env {
				env[e.Name] = e.Value
			}
			label, hasLabel := pod.Labels["prompts.persona-operator.dev/revision"]
			annotation, hasAnnotation := pod.Annotations["prompts.persona-operator.dev/revision"]
			revision, hasEnv := env["PERSONA_REVISION"]
			if tc.revision == 0 {
				// A live mount: no revision anywhere, it would go stale.
				if hasLabel || hasAnnotation || hasEnv {
					t.Errorf("live pod has revision label %q, annotation %q, env %q", label, annotation, revision)
				}
			} else if want := tc.configMap[len("persona-reviewer.r"):]; label != want || annotation != want || revision != want {
				t.Errorf("revision label %q, annotation %q, env %q; want %s", label, annotation, revision, want)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	pod := agentPod(map[string]string{
		"prompts.persona-operator.dev/mount-path": "/var/prompt",
		"prompts.persona-operator.dev/containers": "setup, agent",
		"prompts.persona-operator.dev/variant":    "short",
	})
	if _, errs := Pod(pod, reviewer(), platform); len(errs) > 0 {
		t.Fatal(errs)
	}
	want := corev1.VolumeMount{Name: "persona-prompt", MountPath: "/var/prompt", ReadOnly: true}
	for _, c := range []corev1.Container{pod.Spec.InitContainers[0], pod.Spec.Containers[0]} {
		if n := len(c.VolumeMounts); n == 0 || !reflect.DeepEqual(c.VolumeMounts[n-1], want) {
			t.Errorf("%s mounts = %+v, want %+v last", c.Name, c.VolumeMounts, want)
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if env["PERSONA_PROMPT_FILE"] != "/var/prompt/system-prompt.short.md" || env["PERSONA_BUNDLE_FILE"] != "/var/prompt/bundle.json" {
			t.Errorf("%s env = %v", c.Name, env)
		}
	}
	if sidecar := pod.Spec.Containers[1]; len(sidecar.VolumeMounts) != 1 || len(sidecar.Env) != 0 {
		t.Errorf("the sidecar, not listed, = %+v", sidecar)
	}
}

func TestVariantOfAPersonaNotThereYet(t *testing.T) {
	pod := agentPod(map[string]string{"prompts.persona-operator.dev/variant": "short"})
	if _, errs := Pod(pod, nil, Config{}); len(errs) > 0 {
		t.Errorf("a variant of a Persona the cache does not know yet is refused: %v", errs)
	}
}

func TestHandMountedLeftAlone(t *testing.T) {
	for _, configMap := range []string{"persona-reviewer", "persona-reviewer.r2"} {
		for name, source := range map[string]corev1.VolumeSource{
			"configMap": {ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}},
			"projected": {Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}}},
		} {
			pod := agentPod(map[string]string{"prompts.persona-operator.dev/variant": "no such"})
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "prompt", VolumeSource: source})
			pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "prompt", MountPath: "/etc/persona"}}
			before := pod.DeepCopy()
			res, errs := Pod(pod, reviewer(), Config{})
			if res.Changed || len(errs) > 0 || !reflect.DeepEqual(pod, before) {
				t.Errorf("%s volume of %s: %+v, %v; the pod changed: %v", name, configMap, res, errs, !reflect.DeepEqual(pod, before))
			}
		}
	}
	// Another Persona's ConfigMap is no hand mount of this one's.
	pod := agentPod(nil)
	pod.Spec.Volumes[0].ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "persona-reviewer-2"}}
	if res, _ := Pod(pod, reviewer(), Config{}); !res.Changed {
		t.Error("a pod mounting persona-reviewer-2 was left alone as a hand mount of reviewer")
	}
}

func TestUnlabelledPodLeftAlone(t *testing.T) {
	pod := agentPod(map[string]string{"prompts.persona-operator.dev/delivery": "bogus"})
	delete(pod.Labels, "prompts.persona-operator.dev/persona")
	before := pod.DeepCopy()
	if res, errs := Pod(pod, nil, Config{}); res.Changed || len(errs) > 0 || !reflect.DeepEqual(pod, before) {
		t.Errorf("unlabelled pod: %+v, %v", res, errs)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*corev1.Pod)
		want   []string // substrings of the message, which names the cause
	}{
		{"another volume at the mount path", func(p *corev1.Pod) {
			p.Spec.Containers[1].VolumeMounts = append(p.Spec.Containers[1].VolumeMounts, corev1.VolumeMount{Name: "cache", MountPath: "/etc/persona/"})
		}, []string{"spec.containers[1].volumeMounts[1].mountPath", "volume cache", "shadow"}},
		{"a subPath mount under the mount path", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/etc/persona/system-prompt.md", SubPath: "prompt.md"}}
		}, []string{"spec.containers[0].volumeMounts[0].mountPath", "/etc/persona/system-prompt.md", "shadow"}},
		{"a mount under a custom mount path", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/mount-path": "/etc"}
		}, []string{"spec.containers[1].volumeMounts[0].mountPath", "/etc/personal"}},
		{"an unknown variant", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/variant": "long"}
		}, []string{"prompts.persona-operator.dev/variant", "long", "no such variant", "short"}},
		{"a variant that does not parse", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/variant": "Short!"}
		}, []string{"prompts.persona-operator.dev/variant", "Short!"}},
		{"a relative mount path", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/mount-path": "etc/persona"}
		}, []string{"prompts.persona-operator.dev/mount-path", "supported values", `"/etc/persona"`}},
		{"a mount path the platform does not list", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/mount-path": "/lib/persona"}
		}, []string{"prompts.persona-operator.dev/mount-path", `"/lib/persona"`, "supported values", `"/var/prompt"`}},
		{"an unclean mount path", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/mount-path": "/etc/../persona"}
		}, []string{"prompts.persona-operator.dev/mount-path"}},
		{"the root as mount path", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/mount-path": "/"}
		}, []string{"prompts.persona-operator.dev/mount-path"}},
		{"an unknown delivery", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/delivery": "Live"}
		}, []string{"prompts.persona-operator.dev/delivery", `"Live"`, "live"}},
		{"a revision that does not parse", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/revision": "03"}
		}, []string{"prompts.persona-operator.dev/revision", "positive integer"}},
		{"a zero revision", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/revision": "0"}
		}, []string{"prompts.persona-operator.dev/revision"}},
		{"an unknown container", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/containers": "agent,agnet"}
		}, []string{"prompts.persona-operator.dev/containers", "agnet"}},
		{"an empty container list entry", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"prompts.persona-operator.dev/containers": "agent,"}
		}, []string{"prompts.persona-operator.dev/containers"}},
		{"a Persona label that names no Persona", func(p *corev1.Pod) {
			p.Labels["prompts.persona-operator.dev/persona"] = "Reviewer"
		}, []string{"metadata.labels[prompts.persona-operator.dev/persona]", "Reviewer"}},
		{"the volume name taken", func(p *corev1.Pod) {
			p.Spec.Volumes[0].Name = "persona-prompt"
		}, []string{"spec.volumes[0].name", "persona-prompt", "no pod's own"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := agentPod(nil)
			tc.modify(pod)
			before := pod.DeepCopy()
			res, errs := Pod(pod, reviewer(), platform)
			if len(errs) == 0 {
				t.Fatalf("not refused: %+v", res)
			}
			msg := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not name %q", msg, w)
				}
			}
			if !reflect.DeepEqual(pod, before) {
				t.Error("a refused pod was changed")
			}
		})
	}
}

func TestRefusalMessagesAreBounded(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	pod := agentPod(map[string]string{
		"prompts.persona-operator.dev/mount-path": "/" + long, "prompts.persona-operator.dev/variant": long,
		"prompts.persona-operator.dev/containers": long, "prompts.persona-operator.dev/revision": long,
		"prompts.persona-operator.dev/delivery": long,
	})
	_, errs := Pod(pod, reviewer(), Config{})
	if len(errs) != 5 { // each annotation, the containers one too long
		t.Errorf("errors = %v, want 5", errs)
	}
	pod = agentPod(map[string]string{"prompts.persona-operator.dev/containers": strings.Repeat("x,", 100_000) + "x"})
	if _, errs := Pod(pod, reviewer(), Config{}); len(errs) != 1 || len(errs.ToAggregate().Error()) > 512 {
		t.Errorf("100,001 unknown containers: %d errors", len(errs))
	}
	if n := len(errs.ToAggregate().Error()); n > 4096 {
		t.Errorf("the message is %d bytes for 500 KB of annotations", n)
	}
}

// worstPod is the costliest pod within the bounds: the most containers,
// each with many mounts under the mount path, and the longest containers
// annotation, of names that repeat the last container's.
func worstPod(containers int) *corev1.Pod {
	pod := agentPod(map[string]string{"prompts.persona-operator.dev/containers": strings.TrimSuffix(strings.Repeat("c,", maxContainersAnnotation/2), ",")})
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = make([]corev1.Container, containers)
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Name = "a"
		for range 1000 {
			pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts, corev1.VolumeMount{Name: "cache", MountPath: "/etc/persona/x"})
		}
	}
	pod.Spec.Containers[containers-1].Name = "c"
	return pod
}

// A pod reaches the webhook before the API server validates it: too many
// containers are refused before any work, and what is checked within the
// bounds lists at most maxRefusals refusals.
func TestWorstPodsAreBounded(t *testing.T) {
	if _, errs := Pod(worstPod(maxContainers+1), reviewer(), Config{}); len(errs) != 1 || errs[0].Type != "FieldValueTooMany" {
		t.Errorf("%d containers: %v, want one refusal of too many", maxContainers+1, errs)
	}
	pod := worstPod(maxContainers)
	pod.Annotations = nil // every container gets the mount: each shadows it
	if _, errs := Pod(pod, reviewer(), Config{}); len(errs) != maxRefusals {
		t.Errorf("%d refusals, want %d", len(errs), maxRefusals)
	}
	if _, errs := Pod(worstPod(maxContainers), reviewer(), Config{}); len(errs) != maxRefusals {
		t.Errorf("with the containers annotation: %d refusals, want %d", len(errs), maxRefusals)
	}
}

// BenchmarkWorstPod is the cost of the costliest pod within the bounds.
// The pod is refused, so left as it came: one serves every round.
func BenchmarkWorstPod(b *testing.B) {
	pod, p := worstPod(maxContainers), reviewer()
	for b.Loop() {
		if _, errs := Pod(pod, p, Config{}); len(errs) == 0 {
			b.Fatal("the worst pod was admitted")
		}
	}
}
