package inject

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func configMapSource(name string) corev1.VolumeSource {
	return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

func projection(names ...string) corev1.VolumeSource {
	p := &corev1.ProjectedVolumeSource{}
	for _, n := range names {
		p.Sources = append(p.Sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: n}}})
	}
	return corev1.VolumeSource{Projected: p}
}

// withPromptVolume is agentPod with a volume of the webhook's name, as the
// pod brings it (volume 1).
func withPromptVolume(source corev1.VolumeSource) *corev1.Pod {
	pod := agentPod(nil)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "persona-prompt", VolumeSource: source})
	return pod
}

// refused checks that Pod refuses pod, unchanged, with a message that has
// each of want (the field first).
func refused(t *testing.T, pod *corev1.Pod, want ...string) {
	t.Helper()
	before := pod.DeepCopy()
	res, errs := Pod(pod, reviewer())
	if len(errs) == 0 {
		t.Fatalf("not refused: %+v", res)
	}
	msg := errs.ToAggregate().Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q does not name %q", msg, w)
		}
	}
	if !reflect.DeepEqual(pod, before) {
		t.Error("a refused pod was changed")
	}
}

// The webhook owns the persona-prompt volume whole: a pod's own is accepted
// only in exactly the shape the webhook writes (a reinvocation brings that
// back), and any other is refused, naming the field.
func TestPromptVolumeOnlyInTheWebhooksShape(t *testing.T) {
	items := configMapSource("persona-reviewer")
	items.ConfigMap.Items = []corev1.KeyToPath{{Key: "persona.md", Path: "system-prompt.md"}}
	optional := configMapSource("persona-reviewer.r3")
	optional.ConfigMap.Optional = ptr.To(false)
	mode := configMapSource("persona-reviewer.r3")
	mode.ConfigMap.DefaultMode = ptr.To[int32](0o755)
	withSecret := configMapSource("persona-reviewer")
	withSecret.Secret = &corev1.SecretVolumeSource{SecretName: "prompt"}
	for _, tc := range []struct {
		name   string
		source corev1.VolumeSource
		want   []string
	}{
		{"items mapping persona.md to system-prompt.md", items, []string{"spec.volumes[1].configMap.items", "whole ConfigMap"}},
		{"a projection of the live ConfigMap", projection("persona-reviewer"), []string{"spec.volumes[1].projected", "configMap alone"}},
		{"another ConfigMap", configMapSource("prompts"), []string{"spec.volumes[1].configMap.name", "persona-reviewer or one of its snapshots, not prompts"}},
		{"another Persona's ConfigMap", configMapSource("persona-writer.r1"), []string{"spec.volumes[1].configMap.name", "not persona-writer.r1"}},
		{"another source", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, []string{"spec.volumes[1].emptyDir"}},
		{"another source beside the ConfigMap", withSecret, []string{"spec.volumes[1].secret"}},
		{"optional", optional, []string{"spec.volumes[1].configMap.optional"}},
		{"a defaultMode of its own", mode, []string{"spec.volumes[1].configMap.defaultMode", "0644"}},
	} {
		t.Run(tc.name, func(t *testing.T) { refused(t, withPromptVolume(tc.source), tc.want...) })
	}

	// The webhook's own shape, as the API server sends it back on
	// reinvocation (defaultMode set to its default): accepted, its
	// revision re-judged as ever, and nothing changes a second time.
	for _, tc := range []struct {
		name, configMap string
		mode            *int32
		want            int64
	}{
		{"the live ConfigMap", "persona-reviewer", nil, 3},
		{"a snapshot with the current guardrails", "persona-reviewer.r2", nil, 2},
		{"a snapshot, defaultMode defaulted", "persona-reviewer.r2", ptr.To[int32](0o644), 2},
		{"a snapshot predating a guardrail", "persona-reviewer.r1", nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			source := configMapSource(tc.configMap)
			source.ConfigMap.DefaultMode = tc.mode
			pod := withPromptVolume(source)
			res, errs := Pod(pod, reviewer())
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if res.Revision != tc.want && (tc.configMap != "persona-reviewer" || res.Revision != 0) {
				t.Errorf("revision %d, want %d", res.Revision, tc.want)
			}
			once := pod.DeepCopy()
			if _, errs := Pod(pod, reviewer()); len(errs) > 0 || !reflect.DeepEqual(pod, once) {
				t.Errorf("reinvocation: %v, changed %v", errs, !reflect.DeepEqual(pod, once))
			}
		})
	}
}

// A hand mount of the Persona's ConfigMap, or of a snapshot, is left alone
// only when it mounts the whole ConfigMap; the webhook is told which
// ConfigMaps it mounts, to check whose they are.
func TestHandMountsOnlyWhole(t *testing.T) {
	handPod := func(source corev1.VolumeSource) *corev1.Pod {
		pod := agentPod(nil)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "prompt", VolumeSource: source})
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "prompt", MountPath: "/etc/persona"}}
		return pod
	}
	items := configMapSource("persona-reviewer")
	items.ConfigMap.Items = []corev1.KeyToPath{{Key: "persona.md", Path: "system-prompt.md"}}
	projectedItems := projection("persona-reviewer.r2")
	projectedItems.Projected.Sources[0].ConfigMap.Items = []corev1.KeyToPath{{Key: "persona.md", Path: "system-prompt.md"}}
	beside := projection("persona-reviewer")
	beside.Projected.Sources = append(beside.Projected.Sources, corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{}})
	subPath := handPod(configMapSource("persona-reviewer"))
	subPath.Spec.Containers[0].VolumeMounts[0].SubPath = "persona.md"
	subPathExpr := handPod(configMapSource("persona-reviewer.r2"))
	subPathExpr.Spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "prompt", MountPath: "/p", SubPathExpr: "$(FILE)"}}
	many := handPod(configMapSource("persona-reviewer"))
	for i := range maxHandMounts {
		many.Spec.Volumes = append(many.Spec.Volumes, corev1.Volume{Name: fmt.Sprint("r", i), VolumeSource: configMapSource(fmt.Sprint("persona-reviewer.r", i+1))})
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"too many", many, []string{"spec.volumes", "more than 10 ConfigMaps of persona reviewer"}},
		{"items", handPod(items), []string{"spec.volumes[1].configMap.items", "volume prompt picks items of persona-reviewer"}},
		{"a projection's items", handPod(projectedItems), []string{"spec.volumes[1].projected.sources[0].configMap.items"}},
		{"a projection with another source", handPod(beside), []string{"spec.volumes[1].projected.sources", "other sources"}},
		{"a subPath", subPath, []string{"spec.containers[0].volumeMounts[0].subPath", "subPath persona.md of volume prompt"}},
		{"a subPathExpr in an init container", subPathExpr, []string{"spec.initContainers[0].volumeMounts[0].subPathExpr"}},
	} {
		t.Run(tc.name, func(t *testing.T) { refused(t, tc.pod, tc.want...) })
	}

	for _, tc := range []struct {
		name, configMap, field string
		source                 corev1.VolumeSource
	}{
		{"configMap", "persona-reviewer", "spec.volumes[1].configMap.name", configMapSource("persona-reviewer")},
		{"projected", "persona-reviewer.r2", "spec.volumes[1].projected.sources[0].configMap.name", projection("persona-reviewer.r2")},
	} {
		t.Run("whole, "+tc.name, func(t *testing.T) {
			pod := handPod(tc.source)
			before := pod.DeepCopy()
			res, errs := Pod(pod, reviewer())
			if len(errs) > 0 || res.Changed || !reflect.DeepEqual(pod, before) {
				t.Fatalf("%+v, %v; changed %v", res, errs, !reflect.DeepEqual(pod, before))
			}
			if len(res.Mounts) != 1 || res.Mounts[0].ConfigMap != tc.configMap || res.Mounts[0].Field.String() != tc.field {
				t.Errorf("mounts %+v, want %s named by %s", res.Mounts, tc.configMap, tc.field)
			}
		})
	}
	// The webhook's volume beside a hand mount: the webhook never writes
	// both, and the hand mount must not shield an older revision in it.
	both := withPromptVolume(configMapSource("persona-reviewer.r1"))
	both.Spec.Volumes = append(both.Spec.Volumes, corev1.Volume{Name: "prompt", VolumeSource: configMapSource("persona-reviewer")})
	refused(t, both, "spec.volumes[persona-prompt]", "mount the prompt one way")
	// An injected pod: the ConfigMap it gets, named by the label that asked for it.
	res, errs := Pod(agentPod(nil), reviewer())
	if len(errs) > 0 || len(res.Mounts) != 1 || res.Mounts[0].ConfigMap != "persona-reviewer.r3" ||
		res.Mounts[0].Field.String() != "metadata.labels[prompts.persona-operator.dev/persona]" {
		t.Errorf("injected: %+v, %v", res, errs)
	}
	// The webhook's volume, by subPath, in a container that is not a target.
	pod := withPromptVolume(configMapSource("persona-reviewer.r3"))
	pod.Spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "persona-prompt", MountPath: "/p", SubPath: "persona.md"}}
	refused(t, pod, "spec.initContainers[0].volumeMounts[0].subPath")
}

// Shadows are judged on the path the kubelet mounts: a relative mountPath
// is made absolute, then cleaned, in every container that gets the prompt,
// init containers and sidecars included when they are named. A mount under
// the kernel's links back into the container's files is refused too.
func TestShadowsOnTheKubeletsPath(t *testing.T) {
	for _, tc := range []struct {
		name, mountPath string
		annotations     map[string]string
		init            bool
		want            string
	}{
		{"relative, with a subPath", "etc/persona/system-prompt.md", nil, false, "spec.containers[0].volumeMounts[0].mountPath"},
		{"relative, the mount path itself", "etc/persona", nil, false, "spec.containers[0].volumeMounts[0].mountPath"},
		{"relative and unclean", "./etc//persona/../persona/bundle.json", nil, false, "spec.containers[0].volumeMounts[0].mountPath"},
		{"in a named init container", "etc/persona/system-prompt.md", map[string]string{ContainersAnnotation: "setup"}, true, "spec.initContainers[0].volumeMounts[0].mountPath"},
		{"through the container's root in /proc", "/proc/self/root/etc/persona", nil, false, "spec.containers[0].volumeMounts[0].mountPath"},
		{"through another process's root", "proc/1/root/etc/persona/system-prompt.md", nil, false, "spec.containers[0].volumeMounts[0].mountPath"},
		{"through /dev's links into /proc/self/fd", "/dev/fd/3/persona", nil, false, "spec.containers[0].volumeMounts[0].mountPath"},
		{"under /sys", "/sys/fs/cgroup/persona", nil, false, "spec.containers[0].volumeMounts[0].mountPath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := agentPod(tc.annotations)
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "mine", VolumeSource: configMapSource("prompts")})
			mount := []corev1.VolumeMount{{Name: "mine", MountPath: tc.mountPath, SubPath: "system-prompt.md"}}
			if tc.init {
				pod.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways) // a sidecar
				pod.Spec.InitContainers[0].VolumeMounts = mount
			} else {
				pod.Spec.Containers[0].VolumeMounts = mount
			}
			refused(t, pod, tc.want, "shadow")
		})
	}
	// Memory for /dev/shm, and a path that only begins like /proc, are no links.
	for _, p := range []string{"/dev/shm", "/procedures/notes"} {
		pod := agentPod(nil)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: p}}
		if _, errs := Pod(pod, reviewer()); len(errs) > 0 {
			t.Errorf("a mount at %s: %v", p, errs)
		}
	}
	// The webhook's own mount is skipped only as it writes it: whole.
	pod := withPromptVolume(configMapSource("persona-reviewer.r3"))
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "persona-prompt", MountPath: "/etc/persona", SubPath: "persona.md"}}
	targets, _ := targetContainers(pod, nil)
	if errs := shadows(pod, targets, "/etc/persona"); len(errs) != 1 || !strings.Contains(errs[0].Field, "spec.containers[0].volumeMounts[0]") {
		t.Errorf("a subPath mount of the webhook's volume at the mount path: %v, want one shadow", errs)
	}
}
