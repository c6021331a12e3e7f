package inject

import (
	"fmt"
	"reflect"
	"slices"
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
	res, errs := Pod(pod, reviewer(), platform)
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
			res, errs := Pod(pod, reviewer(), Config{})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if res.Revision != tc.want && (tc.configMap != "persona-reviewer" || res.Revision != 0) {
				t.Errorf("revision %d, want %d", res.Revision, tc.want)
			}
			once := pod.DeepCopy()
			if _, errs := Pod(pod, reviewer(), Config{}); len(errs) > 0 || !reflect.DeepEqual(pod, once) {
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
			res, errs := Pod(pod, reviewer(), Config{})
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
	res, errs := Pod(agentPod(nil), reviewer(), Config{})
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
		{"relative and unclean", "./etc//persona/./bundle.json", nil, false, "spec.containers[0].volumeMounts[0].mountPath"},
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
		if _, errs := Pod(pod, reviewer(), Config{}); len(errs) > 0 {
			t.Errorf("a mount at %s: %v", p, errs)
		}
	}
	// The webhook's own mount is skipped only as it writes it: whole.
	pod := withPromptVolume(configMapSource("persona-reviewer.r3"))
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "persona-prompt", MountPath: "/etc/persona", SubPath: "persona.md"}}
	targets, _ := targetContainers(pod, nil)
	if errs := shadows(pod, targets, "/etc/persona", Config{}); len(errs) != 1 || !strings.Contains(errs[0].Field, "spec.containers[0].volumeMounts[0]") {
		t.Errorf("a subPath mount of the webhook's volume at the mount path: %v, want one shadow", errs)
	}
}

// The runtime mounts a path through the symlinks of what is mounted before
// it, deeper paths later. So in a container that gets the prompt, no mount
// may sit under a volume whose files the pod or another may write (a
// symlink there leads anywhere), and the prompt's own mount under no
// volume at all (a ConfigMap's item paths are symlinks too). Under a
// volume only the kubelet writes, mounts may nest: its symlinks stay in it.
func TestNestedMounts(t *testing.T) {
	pvc := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "workspace"}}
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	image := corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "tools:1"}}
	secret := corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}
	downward := corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}
	type mount struct{ volume, path string }
	// pod has, in the agent container (which gets the prompt unless the
	// annotations say otherwise), the mounts in order, each of its own
	// volume of the given source; a volume named "missing" is not declared.
	pod := func(annotations map[string]string, sources map[string]corev1.VolumeSource, mounts ...mount) *corev1.Pod {
		p := agentPod(annotations)
		for _, m := range mounts {
			if s, ok := sources[m.volume]; ok && !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.volume }) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: m.volume, VolumeSource: s})
			}
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: m.volume, MountPath: m.path})
		}
		return p
	}
	sources := map[string]corev1.VolumeSource{"pvc": pvc, "scratch": emptyDir, "tools": image, "config": configMapSource("app"),
		"tls": secret, "labels": downward, "bundle": projection("app"), "tenant": configMapSource("tenant-prompt")}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		mounts      []mount
		want        []string // the first is the field refused
	}{
		{"under a PVC, through its symlink onto /etc", nil, []mount{{"pvc", "/data"}, {"tenant", "/data/l/persona"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "volume tenant", "under volume pvc at /data", "persona reviewer at /etc/persona"}},
		{"under an emptyDir, by a relative path", nil, []mount{{"scratch", "home/agent"}, {"config", "/home/agent/./.config"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "volume config", "under volume scratch"}},
		{"under an image volume", nil, []mount{{"tools", "/opt/tools"}, {"config", "/opt/tools/etc"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "under volume tools"}},
		{"under a volume the pod does not declare", nil, []mount{{"missing", "/data"}, {"config", "/data/x"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "under volume missing"}},
		{"under a PVC, through a ConfigMap between", nil, []mount{{"pvc", "/a"}, {"config", "/a/b"}, {"tls", "/a/b/c"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "spec.containers[0].volumeMounts[2].mountPath", "volume tls is mounted at /a/b/c, under volume pvc"}},
		{"under a PVC, a sibling that sorts between", nil, []mount{{"pvc", "/a"}, {"config", "/a!b"}, {"tenant", "/a/b"}},
			[]string{"spec.containers[0].volumeMounts[2].mountPath", "under volume pvc"}},
		{"the prompt under an emptyDir", nil, []mount{{"scratch", "/etc"}},
			[]string{"spec.containers[0].volumeMounts[0].mountPath", "volume scratch is mounted at /etc, above /etc/persona"}},
		// A ConfigMap's item persona/readme makes /opt/agent/persona a
		// symlink to ..data/persona, where the tenant's mount lands later.
		{"the prompt under a ConfigMap's item symlink", map[string]string{MountPathAnnotation: "/var/prompt"},
			[]mount{{"config", "/var"}, {"tenant", "/var/..data/prompt"}},
			[]string{"spec.containers[0].volumeMounts[0].mountPath", "volume config is mounted at /var, above /var/prompt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(tc.annotations, sources, tc.mounts...)
			refused(t, p, tc.want...)
			if _, errs := Pod(p, reviewer(), platform); !strings.HasPrefix(errs[0].Field, tc.want[0]) {
				t.Errorf("first refusal names %s, want %s", errs[0].Field, tc.want[0])
			}
		})
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		mounts      []mount
	}{
		{"under a ConfigMap, a Secret", nil, []mount{{"config", "/etc/app"}, {"tls", "/etc/app/tls"}}},
		{"under a projection and a downwardAPI volume", nil, []mount{{"bundle", "/run/app"}, {"labels", "/run/app/labels"}, {"tenant", "/run/app/labels/x"}}},
		{"under a ConfigMap, an emptyDir with nothing under it", nil, []mount{{"config", "/a"}, {"scratch", "/a/b"}}},
		{"beside a PVC, a path that only begins like it", nil, []mount{{"pvc", "/data"}, {"config", "/data2/x"}, {"tls", "/data-x"}}},
		{"under a PVC, in a container that does not get the prompt", map[string]string{ContainersAnnotation: "sidecar"},
			[]mount{{"pvc", "/data"}, {"tenant", "/data/l/persona"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(tc.annotations, sources, tc.mounts...)
			p.Spec.Containers[0].Env = nil // a container that sets PERSONA_NAME gets the prompt
			if _, errs := Pod(p, reviewer(), platform); len(errs) > 0 {
				t.Errorf("refused: %v", errs)
			}
		})
	}
}

// comparePaths orders a path's descendants right after it, before any
// sibling that shares its text ("/a!b": '!' is below '/').
func TestComparePaths(t *testing.T) {
	paths := []string{"/a!b", "/a/b/c", "/b", "/a", "/a/b", "/", "/a-b/c"}
	slices.SortFunc(paths, comparePaths)
	if want := []string{"/", "/a", "/a/b", "/a/b/c", "/a!b", "/a-b/c", "/b"}; !slices.Equal(paths, want) {
		t.Errorf("order %v, want %v", paths, want)
	}
}

// The webhook's variables are its own: a container that does not get the
// prompt may not set them (a harness there would read the pod's file as
// the operator's), and one that reads variables from a ConfigMap or Secret
// gets them empty, so that none comes from there.
func TestVariablesOfOtherContainers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		modify      func(*corev1.Pod)
		want        []string
	}{
		{"an agent the annotation leaves out", map[string]string{ContainersAnnotation: "sidecar"}, func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "HOME", Value: "/home"}, {Name: EnvPromptFile, Value: "/etc/persona/system-prompt.md"}}
		}, []string{"spec.containers[0].env[1].name", "container agent does not get the prompt of persona reviewer", "the annotation " + ContainersAnnotation, EnvPromptFile}},
		{"an init container, from a field", nil, func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: EnvBundleFile, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		}, []string{"spec.initContainers[0].env[0].name", "container setup", "not its init containers", EnvBundleFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := agentPod(tc.annotations)
			tc.modify(p)
			refused(t, p, tc.want...)
		})
	}

	p := agentPod(map[string]string{ContainersAnnotation: "agent"})
	from := []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	p.Spec.Containers[0].EnvFrom = from
	p.Spec.Containers[1].EnvFrom = from
	p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: EnvModel}} // empty: as the webhook sets it
	if _, errs := Pod(p, reviewer(), platform); len(errs) > 0 {
		t.Fatal(errs)
	}
	values := func(c corev1.Container) map[string]string {
		m := map[string]string{}
		for _, e := range c.Env {
			if slices.Contains(envNames, e.Name) {
				if _, twice := m[e.Name]; twice {
					t.Errorf("container %s sets %s twice", c.Name, e.Name)
				}
				m[e.Name] = e.Value
			}
		}
		return m
	}
	empty := map[string]string{}
	for _, n := range envNames {
		empty[n] = ""
	}
	if got := values(p.Spec.Containers[1]); !reflect.DeepEqual(got, empty) {
		t.Errorf("sidecar, which reads a ConfigMap into its environment: %v, want each of %v empty", got, envNames)
	}
	if got := values(p.Spec.Containers[0]); got[EnvPromptFile] != "/etc/persona/system-prompt.md" {
		t.Errorf("agent: %v, want the prompt file set", got)
	}
	if got := values(p.Spec.InitContainers[0]); len(got) != 0 {
		t.Errorf("init container, which reads nothing into its environment: %v, want none", got)
	}
	once := p.DeepCopy()
	if _, errs := Pod(p, reviewer(), platform); len(errs) > 0 || !reflect.DeepEqual(p, once) {
		t.Errorf("reinvocation: %v, changed %v", errs, !reflect.DeepEqual(p, once))
	}
}

// Only the platform chooses where the prompt may go: a path of the flag
// must be clean, absolute and outside the kernel's links.
func TestCheckMountPath(t *testing.T) {
	for _, p := range []string{"/etc/persona", "/run/prompt", "/p"} {
		if err := CheckMountPath(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for p, want := range map[string]string{"etc/persona": "absolute", "/etc/../persona": "clean", "/": "other than /",
		"/etc/persona/": "clean", "/a:b": "':'", "/proc/self/root/etc": "kernel's links", "/sys": "kernel's links",
		"/" + strings.Repeat("a", 256): "256 bytes"} {
		if err := CheckMountPath(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", truncate(p), err, want)
		}
	}
	if err := (Config{MountPaths: []string{"/etc/persona", "prompt"}}).Check(); err == nil || !strings.Contains(err.Error(), `"prompt"`) {
		t.Errorf("a config with a relative path: %v", err)
	}
}

// The kubelet mounts more than volumes: a file of its own at the
// termination message path, which the container writes, and a device node
// at a raw block device's path, which holds the device's bytes. Over the
// prompt, either would be what the agent reads.
func TestKubeletFilesOverThePrompt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(c *corev1.Container)
		want   []string
	}{
		{"the termination message on the prompt", func(c *corev1.Container) { c.TerminationMessagePath = "/etc/persona/system-prompt.md" },
			[]string{"spec.containers[0].terminationMessagePath", "the termination message file is mounted at /etc/persona/system-prompt.md", "shadow"}},
		{"the termination message, relative", func(c *corev1.Container) { c.TerminationMessagePath = "etc/persona/bundle.json" },
			[]string{"spec.containers[0].terminationMessagePath", "shadow"}},
		{"the termination message through /proc", func(c *corev1.Container) { c.TerminationMessagePath = "/proc/self/root/etc/persona/system-prompt.md" },
			[]string{"spec.containers[0].terminationMessagePath", "kernel's links"}},
		{"a device on the prompt", func(c *corev1.Container) {
			c.VolumeDevices = []corev1.VolumeDevice{{Name: "block", DevicePath: "/etc/persona/system-prompt.md"}}
		}, []string{"spec.containers[0].volumeDevices[0].devicePath", "the device of volume block", "shadow"}},
		{"a device under a PVC", func(c *corev1.Container) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/data"}}
			c.VolumeDevices = []corev1.VolumeDevice{{Name: "block", DevicePath: "/data/l/persona/system-prompt.md"}}
		}, []string{"spec.containers[0].volumeDevices[0].devicePath", "under volume cache at /data"}},
		{"the termination message under an emptyDir", func(c *corev1.Container) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/data"}}
			c.TerminationMessagePath = "/data/l/persona/system-prompt.md"
		}, []string{"spec.containers[0].terminationMessagePath", "under volume cache at /data"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := agentPod(nil)
			pod.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "block", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}}}
			tc.modify(&pod.Spec.Containers[0])
			refused(t, pod, tc.want...)
		})
	}
	// Where the API server puts them by default, and a device elsewhere.
	pod := agentPod(nil)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "block", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}})
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "block", DevicePath: "/dev/xvda"}}
	if _, errs := Pod(pod, reviewer(), platform); len(errs) > 0 {
		t.Errorf("defaults: %v", errs)
	}
}

// A mount is judged where it lands: through the image's symlinks (a
// usrmerged image's /lib is usr/lib), and with the runtime's own mount of
// the pod's shared memory, /dev/shm, which every container may write.
func TestMountsWhereTheyLand(t *testing.T) {
	scratch := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	tenant := corev1.Volume{Name: "tenant", VolumeSource: configMapSource("tenant-prompt")}
	for _, tc := range []struct {
		name   string
		cfg    Config
		mounts []corev1.VolumeMount
		want   []string
	}{
		{"under an emptyDir, through /lib", Config{}, []corev1.VolumeMount{{Name: "scratch", MountPath: "/usr/lib/scratch"}, {Name: "tenant", MountPath: "/lib/scratch/l/persona"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "/lib/scratch/l/persona (/usr/lib/scratch/l/persona through the image's symlinks)", "under volume scratch at /usr/lib/scratch"}},
		{"an emptyDir through /var/run, a mount under it", Config{}, []corev1.VolumeMount{{Name: "scratch", MountPath: "/var/run/x"}, {Name: "tenant", MountPath: "/run/x/l/persona"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "under volume scratch at /var/run/x (/run/x through the image's symlinks)"}},
		{"through a symlink the platform lists", Config{ImageSymlinks: map[string]string{"/opt/tools": "/srv"}},
			[]corev1.VolumeMount{{Name: "scratch", MountPath: "/srv"}, {Name: "tenant", MountPath: "/opt/tools/l/persona"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "under volume scratch at /srv"}},
		{"through a symlink to the mount path's directory", Config{ImageSymlinks: map[string]string{"/x": "/etc"}},
			[]corev1.VolumeMount{{Name: "tenant", MountPath: "/x/persona/system-prompt.md", SubPath: "p"}},
			[]string{"spec.containers[0].volumeMounts[0].mountPath", "at or under /etc/persona"}},
		{"under the pod's shared memory", Config{}, []corev1.VolumeMount{{Name: "tenant", MountPath: "/dev/shm/l/persona"}},
			[]string{"spec.containers[0].volumeMounts[0].mountPath", "under the pod's shared memory at /dev/shm"}},
		// crun applies '..' after /var/run's symlink (to /), runc before it (to /var).
		{"'..' after an image symlink", Config{}, []corev1.VolumeMount{{Name: "tenant", MountPath: "/var/run/../etc/persona"}},
			[]string{"spec.containers[0].volumeMounts[0].mountPath", "a path with a '..' element"}},
		// Symlinks an init container wrote: l -> /scratch/x/y and m/f -> /etc.
		{"'..' after an emptyDir's symlinks", Config{ImageSymlinks: map[string]string{}}, []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"},
			{Name: "tenant", MountPath: "/scratch/l/../../m/f/persona"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "a path with a '..' element"}},
		// CRI-O mounts /run/.containerenv, which the container may write, in every container.
		{"an emptyDir above the runtime's files", Config{}, []corev1.VolumeMount{{Name: "scratch", MountPath: "/run"}},
			[]string{"spec.containers[0].volumeMounts[0].mountPath", "the runtime's own file is mounted at /run/.containerenv, under volume scratch at /run"}},
		// A volume above a listed symlink replaces it with its own files: an
		// emptyDir at /var holds what the pod wrote as run (run -> /etc).
		{"a volume above /var/run, a mount through it", Config{}, []corev1.VolumeMount{{Name: "scratch", MountPath: "/var"}, {Name: "tenant", MountPath: "/var/run/persona"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "volume tenant is mounted at /var/run/persona, under volume scratch at /var"}},
		{"a volume above /var/lock, a subPath file through it", Config{}, []corev1.VolumeMount{{Name: "scratch", MountPath: "var"}, {Name: "scratch", SubPath: "p.md", MountPath: "/var/lock/persona/system-prompt.md"}},
			[]string{"spec.containers[0].volumeMounts[1].mountPath", "under volume scratch at var"}},
		// CRI-O on a FIPS host mounts these, after a prompt at depth 2.
		{"an emptyDir above CRI-O's FIPS mounts", Config{}, []corev1.VolumeMount{{Name: "scratch", MountPath: "/etc/crypto-policies"}},
			[]string{"spec.containers[0].volumeMounts[0].mountPath", "the runtime's own file is mounted at /etc/crypto-policies/back-ends, under volume scratch at /etc/crypto-policies"}},
		// The runtime then mounts the shared memory through the volume's symlinks.
		{"an emptyDir at /dev", Config{}, []corev1.VolumeMount{{Name: "scratch", MountPath: "/dev"}},
			[]string{"spec.containers[0].volumeMounts[0].mountPath", "the pod's shared memory is mounted at /dev/shm, under volume scratch at /dev"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := agentPod(nil)
			pod.Spec.Volumes = []corev1.Volume{scratch, tenant}
			pod.Spec.Containers[0].VolumeMounts = tc.mounts
			before := pod.DeepCopy()
			_, errs := Pod(pod, reviewer(), tc.cfg)
			if len(errs) == 0 {
				t.Fatal("not refused")
			}
			if errs[0].Field != tc.want[0] {
				t.Errorf("refusal of %s, want %s: %v", errs[0].Field, tc.want[0], errs)
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(errs.ToAggregate().Error(), w) {
					t.Errorf("%v does not say %q", errs, w)
				}
			}
			if !reflect.DeepEqual(pod, before) {
				t.Error("a refused pod was changed")
			}
		})
	}
	// The termination message file and a device through a hidden /var/run.
	for name, c := range map[string]corev1.Container{
		"terminationMessagePath":      {TerminationMessagePath: "/var/run/persona/system-prompt.md"},
		"volumeDevices[0].devicePath": {VolumeDevices: []corev1.VolumeDevice{{Name: "tenant", DevicePath: "/var/run/persona/system-prompt.md"}}},
	} {
		pod := agentPod(nil)
		pod.Spec.Volumes = []corev1.Volume{scratch, tenant}
		pod.Spec.Containers[0].TerminationMessagePath, pod.Spec.Containers[0].VolumeDevices = c.TerminationMessagePath, c.VolumeDevices
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/var"}}
		_, errs := Pod(pod, reviewer(), Config{})
		if len(errs) == 0 || errs[0].Field != "spec.containers[0]."+name || !strings.Contains(errs[0].Detail, "under volume scratch at /var") {
			t.Errorf("%s through /var/run under an emptyDir at /var: %v", name, errs)
		}
	}
	// A volume at the symlink itself is mounted through it: the symlink stays.
	pod := agentPod(nil)
	pod.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: projection("kube-root-ca.crt")}, tenant}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "token", MountPath: "/var/run"}, {Name: "tenant", MountPath: "/var/run/x"}}
	if _, errs := Pod(pod, reviewer(), Config{}); len(errs) > 0 {
		t.Errorf("a sealed volume at /var/run, another under it: %v", errs)
	}
	// Under the runtime's /run/secrets, which the pod does not write, a mount may go (the token's does).
	pod = agentPod(nil)
	pod.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: projection("kube-root-ca.crt")}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	if _, errs := Pod(pod, reviewer(), Config{}); len(errs) > 0 {
		t.Errorf("the service account token: %v", errs)
	}
	// A memory-backed emptyDir in place of the shared memory is no mount under it.
	pod = agentPod(nil)
	pod.Spec.Volumes = []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}}
	if _, errs := Pod(pod, reviewer(), Config{}); len(errs) > 0 {
		t.Errorf("an emptyDir at /dev/shm: %v", errs)
	}
	// Without the symlink listed, the same mounts are beside each other.
	pod = agentPod(nil)
	pod.Spec.Volumes = []corev1.Volume{scratch, tenant}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/usr/lib/scratch"}, {Name: "tenant", MountPath: "/lib/scratch/l/persona"}}
	if _, errs := Pod(pod, reviewer(), Config{ImageSymlinks: map[string]string{}}); len(errs) > 0 {
		t.Errorf("with no image symlinks listed: %v", errs)
	}
}

func TestImageSymlinksConfig(t *testing.T) {
	for links, want := range map[string]map[string]string{
		"relative":             {"/lib": "usr/lib"},
		"the root":             {"/": "/usr"},
		"a loop":               {"/a": "/b", "/b": "/a"},
		"leads the mount path": {"/etc": "/private/etc"},
		"unclean":              {"/lib/": "/usr/lib"},
	} {
		err := (Config{ImageSymlinks: want}).Check()
		if err == nil {
			t.Errorf("%s %v: accepted", links, want)
		}
	}
	if err := (Config{MountPaths: []string{"/etc/persona"}, ImageSymlinks: DefaultImageSymlinks}).Check(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	if err := (Config{MountPaths: []string{"/var/run/prompt"}}).Check(); err == nil || !strings.Contains(err.Error(), "/run/prompt") {
		t.Errorf("a mount path through /var/run: %v", err)
	}
	if got, err := resolve("/lib/x86_64-linux-gnu", DefaultImageSymlinks); err != nil || got != "/usr/lib/x86_64-linux-gnu" {
		t.Errorf("resolve: %s, %v", got, err)
	}
}

// The webhook's volume is its own before it adds it: a mount of it by
// subPath would pin one file, which a live mount never updates.
func TestSubPathOfThePromptVolumeBeforeItExists(t *testing.T) {
	pod := agentPod(map[string]string{DeliveryAnnotation: DeliveryLive})
	pod.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: VolumeName, MountPath: "/p", SubPath: "system-prompt.md"}}
	refused(t, pod, "spec.containers[1].volumeMounts[0].subPath", "persona-prompt")
}

// CRI-O's FIPS back-ends mount is a directory of the agent image, whose
// symlinks its author wrote: nothing may be mounted under it, a volume of
// the pod at its path included (CRI-O mounts it all the same).
func TestNothingUnderTheImagesBackEnds(t *testing.T) {
	tenant := corev1.Volume{Name: "tenant", VolumeSource: configMapSource("tenant-prompt")}
	other := corev1.Volume{Name: "other", VolumeSource: configMapSource("other")}
	for name, mounts := range map[string][]corev1.VolumeMount{
		"a ConfigMap under it":                {{Name: "tenant", MountPath: "/etc/crypto-policies/back-ends/p"}},
		"a ConfigMap at it, another under it": {{Name: "other", MountPath: "/etc/crypto-policies/back-ends"}, {Name: "tenant", MountPath: "/etc/crypto-policies/back-ends/p"}},
	} {
		pod := agentPod(nil)
		pod.Spec.Volumes = []corev1.Volume{tenant, other}
		pod.Spec.Containers[0].VolumeMounts = mounts
		_, errs := Pod(pod, reviewer(), Config{})
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "under the runtime's own file at /etc/crypto-policies/back-ends") {
			t.Errorf("%s: %v", name, errs)
		}
	}
}

// The volumes hide the image's symlinks in the runtime's order, shallower
// first, whatever the order of volumeMounts: a volume that lands inside an
// earlier one (a ConfigMap at /var/run inside one at /var) hides none, so
// /run/user -> /etc stays, and a mount through it is judged on /etc.
func TestVolumesHideSymlinksInTheRuntimesOrder(t *testing.T) {
	cfg := Config{ImageSymlinks: map[string]string{"/var/run": "/run", "/run/user": "/etc"}}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	atVar := corev1.VolumeMount{Name: "var", MountPath: "/var"}
	atVarRun := corev1.VolumeMount{Name: "run", MountPath: "/var/run"}
	tenant := corev1.VolumeMount{Name: "tenant", MountPath: "/run/user/persona"}
	for name, mounts := range map[string][]corev1.VolumeMount{
		"/var first":     {atVar, atVarRun, tenant},
		"/var/run first": {atVarRun, atVar, tenant},
	} {
		pod := agentPod(nil)
		pod.Spec.Volumes = []corev1.Volume{{Name: "var", VolumeSource: configMapSource("v")}, {Name: "run", VolumeSource: configMapSource("r")},
			{Name: "tenant", VolumeSource: configMapSource("tenant-prompt")}}
		pod.Spec.Containers[0].VolumeMounts = mounts
		_, errs := Pod(pod, reviewer(), cfg)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "at or under /etc/persona") {
			t.Errorf("%s: %v, want the mount through /run/user refused on /etc/persona", name, errs)
		}
	}
}
