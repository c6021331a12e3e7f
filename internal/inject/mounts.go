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

// placed is what the runtime mounts in a container that gets the prompt,
// at the path the kubelet writes (a relative path made absolute, then
// cleaned): a volume, a raw block device, the termination message file, or
// the prompt itself.
type placed struct {
	path string
	// name and written say what it is and where the pod put it, for a
	// refusal; field is the pod's field, nil for the prompt.
	name, written string
	field         *field.Path
	// sealed is a volume only the kubelet writes, with symlinks that stay
	// inside it (sealedVolumes): a mount under it lands under it.
	sealed bool
}

// mountsOf are what the runtime mounts in c but the prompt, whose volumes
// sealed says are sealed. The kubelet mounts a file of its own at the
// termination message path, and a device node at a device's path: files
// the container writes, or the device's bytes.
func mountsOf(pod *corev1.Pod, c *corev1.Container, mountPath string, sealed map[string]bool) []placed {
	at := containerPath(pod, c)
	var out []placed
	for j, m := range c.VolumeMounts {
		if !ownMount(m, mountPath) {
			out = append(out, placed{path: kubeletPath(m.MountPath), name: "volume " + m.Name, written: m.MountPath,
				field: at.Child("volumeMounts").Index(j).Child("mountPath"), sealed: sealed[m.Name]})
		}
	}
	for j, d := range c.VolumeDevices {
		out = append(out, placed{path: kubeletPath(d.DevicePath), name: "the device of volume " + d.Name, written: d.DevicePath,
			field: at.Child("volumeDevices").Index(j).Child("devicePath")})
	}
	if c.TerminationMessagePath != "" {
		out = append(out, placed{path: kubeletPath(c.TerminationMessagePath), name: "the termination message file",
			written: c.TerminationMessagePath, field: at.Child("terminationMessagePath")})
	}
	return out
}

// shadows refuses, in each container that gets the prompt, what the
// runtime would mount over it. The runtime resolves a mount's path through
// the symlinks of what is mounted before it, and mounts the deeper paths
// later, so the path as written is not where a mount lands. Refused (a
// mount here is a volume's, a device's or the termination message file's):
//   - a mount at or under the mount path (but the webhook's own): it would
//     hide the prompt's files, or (subPath) pin one of them;
//   - a mount under the kernel's links back into the container's own files
//     (kernelLinks): /proc/self/root/etc/persona is /etc/persona;
//   - the prompt's mount under another: a symlink there (an item path of a
//     ConfigMap is one) moves the prompt where another mount covers it;
//   - a mount under one whose files the pod or another may write (a PVC,
//     an emptyDir, an image): a symlink there leads anywhere, onto the
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
	for _, c := range targets {
		mounts := []placed{{path: mountPath, sealed: true}}
		for _, m := range mountsOf(pod, c, mountPath, sealed) {
			if !underKernelLinks(m.path) {
				mounts = append(mounts, m)
			} else if refuse(m.field, fmt.Sprintf("%s is mounted at %s, under the kernel's links to the container's own files (/proc/self/root is its root): the runtime follows them, so it could shadow the prompt of persona %s at %s",
				m.name, m.written, persona, mountPath)) {
				return errs
			}
		}
		// In this order a mount's ancestors come before it, and all that
		// is under it right after it; the prompt first among equals.
		slices.SortStableFunc(mounts, func(a, b placed) int { return comparePaths(a.path, b.path) })
		// The mounts above the current one, outermost first, each with the
		// innermost unsealed one at or above it.
		type above struct {
			*placed
			unsealed *placed
		}
		var chain []above
		underPrompt := false
		for i := range mounts {
			m := &mounts[i]
			for len(chain) > 0 && !atOrUnder(m.path, chain[len(chain)-1].path) {
				if chain[len(chain)-1].field == nil {
					underPrompt = false
				}
				chain = chain[:len(chain)-1]
			}
			var where *field.Path
			var why string
			switch {
			case underPrompt:
				where = m.field
				why = fmt.Sprintf("%s is mounted at %s, at or under %s where the prompt of persona %s is mounted: it would shadow the prompt (mount it elsewhere)",
					m.name, m.written, mountPath, persona)
			case m.field == nil && len(chain) > 0:
				outer := chain[len(chain)-1]
				where = outer.field
				why = fmt.Sprintf("%s is mounted at %s, above %s where the prompt of persona %s is mounted: the runtime mounts the prompt through its files, where a symlink would move it under another mount; mount it beside %s, not above it",
					outer.name, outer.written, mountPath, persona, mountPath)
			case len(chain) > 0 && chain[len(chain)-1].unsealed != nil:
				outer := chain[len(chain)-1].unsealed
				where = m.field
				why = fmt.Sprintf("%s is mounted at %s, under %s at %s, whose files the pod or another may write: the runtime mounts it through them, so a symlink there could land it on the prompt of persona %s at %s; mount it beside, not under (only a configMap, secret, downwardAPI or projected volume may hold mounts)",
					m.name, m.written, outer.name, outer.written, persona, mountPath)
			}
			if why != "" && refuse(where, why) {
				return errs
			}
			next := above{placed: m}
			if len(chain) > 0 {
				next.unsealed = chain[len(chain)-1].unsealed
			}
			if !m.sealed {
				next.unsealed = m
			}
			underPrompt = underPrompt || m.field == nil
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
