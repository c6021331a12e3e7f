package webhook_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/test/suite"
)

// The runtime mounts a path through the symlinks of what it mounted before,
// deeper paths later, so a mount whose path reads elsewhere can land on the
// prompt. Each pod below did, on a real kubelet, containerd and runc: each
// is refused now, through the real API server, in a namespace the sample
// pod policy guards, and the refusal names the field.
var _ = Describe("Mounts that could cover the prompt", func() {
	It("refuses them in a guarded namespace, naming the field, and admits mounts that nest under the kubelet's own volumes", func() {
		ns := suite.NewNamespace()
		guard(ns)
		suite.Apply(ns, "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: reviewer}\nspec: {model: m1}\n")
		Eventually(func() int64 { return suite.GetPersona(ns, "reviewer").Status.CurrentRevision }).Should(Equal(int64(1)))
		// The policy is enforced once its binding is seen: an unlabelled pod is refused.
		Eventually(func() error {
			return suite.K8s.Create(suite.Ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "x-", Namespace: ns},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "busybox"}}}})
		}).Should(MatchError(ContainSubstring("label the pod")))

		configMap := func(name, configMap string, items ...corev1.KeyToPath) corev1.Volume {
			return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Items: items}}}
		}
		tenant := configMap("tenant", "tenant-prompt")
		scratch := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		pvc := corev1.Volume{Name: "pvc", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "workspace"}}}
		agentPod := func(annotations map[string]string, env []corev1.EnvVar, volumes []corev1.Volume, mounts ...corev1.VolumeMount) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "agent-", Namespace: ns, Annotations: annotations,
					Labels: map[string]string{"prompts.persona-operator.dev/persona": "reviewer"}},
				Spec: corev1.PodSpec{Volumes: volumes, Containers: []corev1.Container{
					{Name: "agent", Image: "platform/agent:pinned", VolumeMounts: mounts, Env: env},
					{Name: "sidecar", Image: "busybox"}}},
			}
		}
		for _, tc := range []struct {
			name string
			pod  *corev1.Pod
			want []string // the field refused, then what the message says
		}{
			{"under the container's root in /proc", agentPod(nil, nil, []corev1.Volume{tenant},
				corev1.VolumeMount{Name: "tenant", MountPath: "/proc/self/root/etc/persona"}),
				[]string{"spec.containers[0].volumeMounts[0].mountPath", "kernel's links"}},
			// A ConfigMap item persona/x makes the mount path a symlink to ..data/prompt.
			{"the prompt under a ConfigMap whose item is a symlink", agentPod(map[string]string{"prompts.persona-operator.dev/mount-path": "/run/prompt"}, nil,
				[]corev1.Volume{tenant, configMap("dir", "tenant-dir", corev1.KeyToPath{Key: "readme", Path: "prompt/readme"})},
				corev1.VolumeMount{Name: "dir", MountPath: "/run"}, corev1.VolumeMount{Name: "tenant", MountPath: "/run/..data/prompt"}),
				[]string{"spec.containers[0].volumeMounts[0].mountPath", "volume dir is mounted at /run, above /run/prompt"}},
			// /lib is usr/lib in a usrmerged image: only the platform lists mount paths.
			{"a mount path through the image's symlink", agentPod(map[string]string{"prompts.persona-operator.dev/mount-path": "/lib/persona"}, nil,
				[]corev1.Volume{tenant}, corev1.VolumeMount{Name: "tenant", MountPath: "/usr/lib/persona"}),
				[]string{"metadata.annotations[prompts.persona-operator.dev/mount-path]", `"/lib/persona"`, "supported values"}},
			// The PVC holds l -> /etc, written by another pod of the namespace.
			{"under a PVC that holds a symlink", agentPod(nil, nil, []corev1.Volume{tenant, pvc},
				corev1.VolumeMount{Name: "pvc", MountPath: "/data"}, corev1.VolumeMount{Name: "tenant", MountPath: "/data/l/persona"}),
				[]string{"spec.containers[0].volumeMounts[1].mountPath", "under volume pvc at /data"}},
			// An init container writes l -> /etc in the emptyDir; /lib is usr/lib in a usrmerged image.
			{"under an emptyDir, through the image's /lib", agentPod(nil, nil, []corev1.Volume{tenant, scratch},
				corev1.VolumeMount{Name: "scratch", MountPath: "/usr/lib/scratch"}, corev1.VolumeMount{Name: "tenant", MountPath: "/lib/scratch/l/persona"}),
				[]string{"spec.containers[0].volumeMounts[1].mountPath", "/usr/lib/scratch/l/persona through the image's symlinks", "under volume scratch"}},
			// The pod's shared memory is the same tmpfs in every container.
			{"under the pod's shared memory", agentPod(nil, nil, []corev1.Volume{tenant},
				corev1.VolumeMount{Name: "tenant", MountPath: "/dev/shm/l/persona"}),
				[]string{"spec.containers[0].volumeMounts[0].mountPath", "under the pod's shared memory at /dev/shm"}},
			{"an emptyDir at /dev, through which the runtime mounts the shared memory", agentPod(nil, nil, []corev1.Volume{scratch},
				corev1.VolumeMount{Name: "scratch", MountPath: "/dev"}),
				[]string{"spec.containers[0].volumeMounts[0].mountPath", "the pod's shared memory is mounted at /dev/shm, under volume scratch at /dev"}},
			// An init container writes run -> /etc in the emptyDir at /var,
			// which hides the image's /var/run -> /run.
			{"through /var/run under an emptyDir at /var", agentPod(nil, nil, []corev1.Volume{tenant, scratch},
				corev1.VolumeMount{Name: "scratch", MountPath: "/var"}, corev1.VolumeMount{Name: "tenant", MountPath: "/var/run/persona"}),
				[]string{"spec.containers[0].volumeMounts[1].mountPath", "volume tenant is mounted at /var/run/persona, under volume scratch at /var"}},
			// crun applies '..' after /var/run's symlink, so this is /etc/persona there.
			{"a path with '..' after a symlink", agentPod(nil, nil, []corev1.Volume{tenant},
				corev1.VolumeMount{Name: "tenant", MountPath: "/var/run/../etc/persona"}),
				[]string{"spec.containers[0].volumeMounts[0].mountPath", "a path with a '..' element"}},
			// CRI-O mounts /run/.containerenv, which the container writes, through the volume.
			{"an emptyDir above the runtime's own files", func() *corev1.Pod {
				p := agentPod(nil, nil, []corev1.Volume{scratch}, corev1.VolumeMount{Name: "scratch", MountPath: "/run"})
				p.Spec.AutomountServiceAccountToken = new(false)
				return p
			}(), []string{"spec.containers[0].volumeMounts[0].mountPath", "the runtime's own file is mounted at /run/.containerenv, under volume scratch at /run"}},
			{"the termination message file on the prompt", func() *corev1.Pod {
				p := agentPod(nil, nil, nil)
				p.Spec.Containers[0].TerminationMessagePath = "/etc/persona/system-prompt.md"
				return p
			}(), []string{"spec.containers[0].terminationMessagePath", "the termination message file", "shadow"}},
			{"a raw block device on the prompt", func() *corev1.Pod {
				p := agentPod(nil, nil, []corev1.Volume{pvc})
				p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "pvc", DevicePath: "/etc/persona/system-prompt.md"}}
				return p
			}(), []string{"spec.containers[0].volumeDevices[0].devicePath", "the device of volume pvc", "shadow"}},
			{"an agent the containers annotation leaves out, with its own prompt file",
				agentPod(map[string]string{"prompts.persona-operator.dev/containers": "sidecar"},
					[]corev1.EnvVar{{Name: "PERSONA_PROMPT_FILE", Value: "/etc/persona/system-prompt.md"}},
					[]corev1.Volume{tenant}, corev1.VolumeMount{Name: "tenant", MountPath: "/etc/persona"}),
				[]string{"spec.containers[0].env[0].name", "container agent does not get the prompt of persona reviewer", "PERSONA_PROMPT_FILE"}},
		} {
			By(tc.name)
			err := suite.K8s.Create(suite.Ctx, tc.pod)
			Expect(err).To(HaveOccurred(), "admitted")
			for _, w := range tc.want {
				Expect(err.Error()).To(ContainSubstring(w))
			}
		}

		By("mounts that nest under a ConfigMap and a Secret, which only the kubelet writes")
		pod := agentPod(nil, nil, []corev1.Volume{configMap("config", "app"),
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}},
			corev1.VolumeMount{Name: "config", MountPath: "/etc/app"}, corev1.VolumeMount{Name: "tls", MountPath: "/etc/app/tls"})
		Expect(suite.K8s.Create(suite.Ctx, pod)).To(Succeed())
		Expect(pod.Spec.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "persona-prompt", MountPath: "/etc/persona", ReadOnly: true}))
	})
})
