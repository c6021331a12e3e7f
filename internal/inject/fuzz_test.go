package inject

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzPod feeds tenant-controlled annotations and mounts to Pod. Whatever
// they are, a refused pod is unchanged; an injected one has exactly one
// prompt volume, one read-only mount of it in each container that gets it,
// nothing that could shadow it, no variable of the webhook's set in another
// container, and a second call changes nothing. The platform allows the
// annotation's mount path when the flag would take it.
func FuzzPod(f *testing.F) {
	f.Add("", "", "", "", "", "", "")
	f.Add("live", "/etc/persona", "agent", "short", "2", "/etc/persona/x", "p.md")
	f.Add("snapshot", "/p", "agent,sidecar", "", "1", "/p", "")
	f.Add("x", "//", ",", "-", "-1", "/etc/persona/../persona", "..")
	f.Fuzz(func(t *testing.T, delivery, mountPath, containers, variant, revision, otherMount, subPath string) {
		annotations := map[string]string{}
		for k, v := range map[string]string{DeliveryAnnotation: delivery, MountPathAnnotation: mountPath, ContainersAnnotation: containers, VariantAnnotation: variant, RevisionAnnotation: revision} {
			if v != "" {
				annotations[k] = v
			}
		}
		pod := agentPod(annotations)
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: otherMount, SubPath: subPath}}
		before := pod.DeepCopy()
		cfg := Config{MountPaths: []string{DefaultMountPath}}
		if CheckMountPath(mountPath) == nil {
			cfg.MountPaths = append(cfg.MountPaths, mountPath)
		}
		res, errs := Pod(pod, reviewer(), cfg)
		if len(errs) > 0 {
			if !reflect.DeepEqual(pod, before) {
				t.Fatal("a refused pod was changed")
			}
			return
		}
		if !res.Changed {
			t.Fatal("a labelled pod without a hand mount was neither refused nor injected")
		}
		volumes := 0
		for _, v := range pod.Spec.Volumes {
			if v.Name == VolumeName {
				volumes++
			}
		}
		if volumes != 1 {
			t.Fatalf("%d prompt volumes", volumes)
		}
		opts, _ := readOptions(pod, "reviewer", cfg)
		targets, _ := targetContainers(pod, opts.containers)
		for _, c := range targets {
			own := 0
			for _, m := range c.VolumeMounts {
				if m.Name == VolumeName {
					own++
					if m.MountPath != opts.mountPath || !m.ReadOnly {
						t.Fatalf("prompt mount %+v", m)
					}
				}
			}
			if own != 1 {
				t.Fatalf("container %s has %d prompt mounts", c.Name, own)
			}
		}
		if errs := shadows(pod, targets, opts.mountPath, cfg); len(errs) > 0 {
			t.Fatalf("an injected pod has a shadowing mount: %v", errs)
		}
		for _, c := range otherContainers(pod, targets) {
			for _, e := range c.Env {
				if slices.Contains(envNames, e.Name) && (e.Value != "" || e.ValueFrom != nil) {
					t.Fatalf("container %s, which does not get the prompt, sets %s", c.Name, e.Name)
				}
			}
		}
		once := pod.DeepCopy()
		if _, errs := Pod(pod, reviewer(), cfg); len(errs) > 0 || !reflect.DeepEqual(pod, once) {
			t.Fatalf("reinvocation: %v, changed %v", errs, !reflect.DeepEqual(pod, once))
		}
	})
}
