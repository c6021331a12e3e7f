package inject

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Config is the platform's part of the injection: the manager's flags.
type Config struct {
	// MountPaths are the paths the mount path annotation may choose; none:
	// DefaultMountPath alone. The runtime resolves a mount's path through
	// the image's symlinks, which the webhook cannot see: only the platform,
	// which knows its agent images, says which paths lead where they say.
	MountPaths []string
}

// mountPaths is c.MountPaths, or DefaultMountPath without them.
func (c Config) mountPaths() []string {
	if len(c.MountPaths) == 0 {
		return []string{DefaultMountPath}
	}
	return c.MountPaths
}

// CheckMountPath says why p cannot be a mount path of the prompt: it is not
// a clean absolute path other than /, without ':', of at most 256 bytes,
// outside the kernel's links back into the container's files.
func CheckMountPath(p string) error {
	switch {
	case len(p) > maxMountPath || !path.IsAbs(p) || path.Clean(p) != p || p == "/" || strings.ContainsAny(p, ":\x00"):
		return fmt.Errorf("%q: must be a clean absolute path other than /, without ':', of at most %d bytes", truncate(p), maxMountPath)
	case underKernelLinks(p):
		return fmt.Errorf("%q: is under the kernel's links to the container's own files (%s)", p, strings.Join(kernelLinks, ", "))
	}
	return nil
}

// Check says why c cannot serve: a mount path that CheckMountPath refuses.
func (c Config) Check() error {
	for _, p := range c.MountPaths {
		if err := CheckMountPath(p); err != nil {
			return fmt.Errorf("mount path %w", err)
		}
	}
	return nil
}

// placed is a mount of a container that gets the prompt, at the path the
// kubelet writes: a relative mountPath is made absolute, then cleaned.
type placed struct {
	path   string
	index  int // in the container's volumeMounts; -1: the prompt's own
	volume string
	// sealed is a volume only the kubelet writes, with symlinks that stay
	// inside it (sealedSource): a mount under it lands under it.
	sealed bool
}

// shadows refuses, in each container that gets the prompt, the mounts
// that could cover it. The runtime resolves a mount's path through the
// symlinks of what is mounted before it, and mounts the deeper paths
// later, so the path as written is not where a mount lands. Refused:
//   - a mount at or under the mount path (but the webhook's own): it would
//     hide the prompt's files, or (subPath) pin one of them;
//   - a mount under the kernel's links back into the container's own files
//     (kernelLinks): /proc/self/root/etc/persona is /etc/persona;
//   - the prompt's mount under another volume's: a symlink there (an item
//     path of a ConfigMap is one) moves the prompt where another mount
//     covers it;
//   - a mount under a volume whose files the pod or another may write (a
//     PVC, an emptyDir, an image): a symlink there leads anywhere, onto the
//     prompt too.
//
// What remains is a path through the image's own symlinks, which
// Config.MountPaths leaves to the platform.
func shadows(pod *corev1.Pod, targets []*corev1.Container, mountPath string) field.ErrorList {
	var errs field.ErrorList
	refuse := func(p *field.Path, why string) bool {
		errs = append(errs, field.Forbidden(p, why))
		return len(errs) == maxRefusals // the mounts are the tenant's, of any number: the first ones tell the cause
	}
	sealed := sealedVolumes(pod)
	persona := pod.Labels[PersonaLabel]
	var mounts []placed
	for _, c := range targets {
		at := func(m placed) *field.Path {
			return containerPath(pod, c).Child("volumeMounts").Index(m.index).Child("mountPath")
		}
		mounts = append(mounts[:0], placed{path: mountPath, index: -1, volume: VolumeName, sealed: true})
		for j, m := range c.VolumeMounts {
			if ownMount(m, mountPath) {
				continue
			}
			p := placed{path: kubeletPath(m.MountPath), index: j, volume: m.Name, sealed: sealed[m.Name]}
			if underKernelLinks(p.path) {
				if refuse(at(p), fmt.Sprintf("volume %s is mounted at %s, under the kernel's links to the container's own files (/proc/self/root is its root): the runtime follows them, so it could shadow the prompt of persona %s at %s",
					m.Name, m.MountPath, persona, mountPath)) {
					return errs
				}
				continue
			}
			mounts = append(mounts, p)
		}
		// In this order a mount's ancestors come before it, and all that
		// is under it right after it; the prompt first among equals.
		slices.SortStableFunc(mounts, func(a, b placed) int {
			return cmp.Or(comparePaths(a.path, b.path), cmp.Compare(a.index, b.index))
		})
		// The mounts above the current one, outermost first, each with the
		// innermost unsealed one at or above it.
		type above struct {
			placed
			unsealed *placed
		}
		var chain []above
		var prompt *placed // in chain
		for i := range mounts {
			m := &mounts[i]
			for len(chain) > 0 && !atOrUnder(m.path, chain[len(chain)-1].path) {
				if chain[len(chain)-1].index == -1 {
					prompt = nil
				}
				chain = chain[:len(chain)-1]
			}
			var why string
			var where placed
			switch {
			case prompt != nil:
				where = *m
				why = fmt.Sprintf("volume %s is mounted at %s, at or under %s where the prompt of persona %s is mounted: it would shadow the prompt (mount it elsewhere)",
					m.volume, c.VolumeMounts[m.index].MountPath, mountPath, persona)
			case m.index == -1 && len(chain) > 0:
				outer := chain[len(chain)-1]
				where = outer.placed
				why = fmt.Sprintf("volume %s is mounted at %s, above %s where the prompt of persona %s is mounted: the runtime mounts the prompt through that volume's files, where a symlink would move it under another mount; mount the volume beside %s, not above it",
					outer.volume, c.VolumeMounts[outer.index].MountPath, mountPath, persona, mountPath)
			case len(chain) > 0 && chain[len(chain)-1].unsealed != nil:
				outer := chain[len(chain)-1].unsealed
				where = *m
				why = fmt.Sprintf("volume %s is mounted at %s, under volume %s at %s, whose files the pod or another may write: the runtime mounts it through them, so a symlink there could land it on the prompt of persona %s at %s; mount it beside %s, not under it (only a configMap, secret, downwardAPI or projected volume may hold mounts)",
					m.volume, c.VolumeMounts[m.index].MountPath, outer.volume, c.VolumeMounts[outer.index].MountPath, persona, mountPath, outer.volume)
			}
			if why != "" && refuse(at(where), why) {
				return errs
			}
			next := above{placed: *m}
			if len(chain) > 0 {
				next.unsealed = chain[len(chain)-1].unsealed
			}
			if !m.sealed {
				next.unsealed = m
			}
			if m.index == -1 {
				prompt = m
			}
			chain = append(chain, next)
		}
	}
	return errs
}

// kubeletPath is where the kubelet mounts mountPath: made absolute, then
// cleaned.
func kubeletPath(mountPath string) string {
	if !strings.HasPrefix(mountPath, "/") {
		mountPath = "/" + mountPath
	}
	return path.Clean(mountPath) // no copy when it is clean
}

// comparePaths orders clean absolute paths by their elements: as strings,
// with '/' below every other byte, so that a path's descendants follow it
// without another path between them.
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		switch {
		case a[i] == '/':
			return -1
		case b[i] == '/':
			return 1
		}
		return cmp.Compare(a[i], b[i])
	}
	return cmp.Compare(len(a), len(b))
}

// atOrUnder reports whether the clean absolute path p is root or under it.
func atOrUnder(p, root string) bool {
	return p == root || root == "/" || len(p) > len(root) && p[len(root)] == '/' && strings.HasPrefix(p, root)
}

// sealedVolumes are the pod's volumes only the kubelet writes, from the
// API server's objects: their files are keys and item paths, which hold no
// '..' and no absolute path, so their symlinks stay inside the volume.
func sealedVolumes(pod *corev1.Pod) map[string]bool {
	sealed := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		if s == (corev1.VolumeSource{ConfigMap: s.ConfigMap}) || s == (corev1.VolumeSource{Secret: s.Secret}) ||
			s == (corev1.VolumeSource{DownwardAPI: s.DownwardAPI}) || s == (corev1.VolumeSource{Projected: s.Projected}) {
			sealed[v.Name] = s != (corev1.VolumeSource{})
		}
	}
	return sealed
}

// kernelLinks are the paths under which the kernel links back into the
// container's own files: /proc/self/root (and every process's root under
// /proc), /sys's links, and /dev's links into /proc/self/fd. The runtime
// resolves a mount's path through them, so a mount at
// /proc/self/root/etc/persona lands on /etc/persona, after the prompt.
var kernelLinks = []string{"/proc", "/sys", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"}

// underKernelLinks reports whether the clean path p is at or under one of
// kernelLinks.
func underKernelLinks(p string) bool {
	return slices.ContainsFunc(kernelLinks, func(root string) bool { return atOrUnder(p, root) })
}

// ownMount reports whether m is the mount the webhook writes: its volume
// whole, at the mount path.
func ownMount(m corev1.VolumeMount, mountPath string) bool {
	return m.Name == VolumeName && m.MountPath == mountPath && m.SubPath == "" && m.SubPathExpr == ""
}
