package inject

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Config is the platform's part of the injection: the manager's flags. The
// runtime resolves a mount's path through the image's symlinks, which the
// webhook cannot see: only the platform, which knows its agent images, can
// say where they lead.
type Config struct {
	// MountPaths are the paths the mount path annotation may choose, the
	// first without it; none: DefaultMountPath alone. No symlink of the
	// images may lead through them.
	MountPaths []string
	// ImageSymlinks are the images' symlinks to directories, by path, each
	// to its target (clean absolute paths): the mounts' paths are judged
	// where they lead. Nil: DefaultImageSymlinks.
	ImageSymlinks map[string]string
}

// DefaultImageSymlinks are the directory symlinks of a usrmerged image
// (Debian 12, Ubuntu, Fedora), and /var/run's and /var/lock's, which most
// images have. Listing one an image does not have refuses more pods, never
// fewer.
var DefaultImageSymlinks = map[string]string{
	"/bin": "/usr/bin", "/sbin": "/usr/sbin", "/lib": "/usr/lib", "/lib32": "/usr/lib32", "/lib64": "/usr/lib64",
	"/libx32": "/usr/libx32", "/var/run": "/run", "/var/lock": "/run/lock",
}

// mountPaths is c.MountPaths, or DefaultMountPath without them.
func (c Config) mountPaths() []string {
	if len(c.MountPaths) == 0 {
		return []string{DefaultMountPath}
	}
	return c.MountPaths
}

// symlinks is c.ImageSymlinks, or DefaultImageSymlinks when nil.
func (c Config) symlinks() map[string]string {
	if c.ImageSymlinks == nil {
		return DefaultImageSymlinks
	}
	return c.ImageSymlinks
}

// maxSymlinkHops bounds the symlinks followed in one path, as the kernel's
// MAXSYMLINKS does.
const maxSymlinkHops = 40

// errSymlinkLoop is a path whose symlinks lead to one another.
var errSymlinkLoop = errors.New("too many levels of symlinks")

// resolve is where the clean absolute path p leads through links: each
// longest listed prefix replaced by its target, until none is left.
func resolve(p string, links map[string]string) (string, error) {
	for range maxSymlinkHops {
		from := ""
		for l := range links {
			if atOrUnder(p, l) && len(l) > len(from) {
				from = l
			}
		}
		if from == "" {
			return p, nil
		}
		p = path.Join(links[from], p[len(from):])
	}
	return p, errSymlinkLoop
}

// CheckMountPath says why p cannot be a mount path of the prompt: it is not
// a clean absolute path other than /, without ':', of at most 256 bytes,
// outside /dev and the kernel's links back into the container's files.
func CheckMountPath(p string) error {
	switch {
	case len(p) > maxMountPath || !path.IsAbs(p) || path.Clean(p) != p || p == "/" || strings.ContainsAny(p, ":\x00"):
		return fmt.Errorf("%q: must be a clean absolute path other than /, without ':', of at most %d bytes", truncate(p), maxMountPath)
	case underKernelLinks(p) || atOrUnder(p, "/dev"):
		return fmt.Errorf("%q: is under /dev or the kernel's links to the container's own files (%s)", p, strings.Join(kernelLinks, ", "))
	}
	return nil
}

// Check says why c cannot serve: a mount path that CheckMountPath refuses,
// or one the listed symlinks lead through; a symlink that is not a clean
// absolute path to another, or that leads back to itself.
func (c Config) Check() error {
	for _, l := range slices.Sorted(maps.Keys(c.ImageSymlinks)) {
		target := c.ImageSymlinks[l]
		for _, p := range []string{l, target} {
			if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
				return fmt.Errorf("image symlink %s=%s: %q must be a clean absolute path other than /", l, target, p)
			}
		}
		if _, err := resolve(l, c.ImageSymlinks); err != nil {
			return fmt.Errorf("image symlink %s=%s: %w", l, target, err)
		}
	}
	for _, p := range c.mountPaths() {
		if err := CheckMountPath(p); err != nil {
			return fmt.Errorf("mount path %w", err)
		}
		if to, _ := resolve(p, c.symlinks()); to != p {
			return fmt.Errorf("mount path %q: leads to %s through the image's symlinks; list that path", p, to)
		}
	}
	return nil
}

// What a placed mount is.
type mountKind int

const (
	thePrompt mountKind = iota
	aVolume
	aDevice
	theTerminationMessage
	theSharedMemory
	aRuntimeFile
)

// placed is what the runtime mounts in a container that gets the prompt,
// at the path it lands on: the path the kubelet writes (a relative one made
// absolute, then cleaned), through the image's symlinks. What a refusal
// says of it is built only for a refusal: a pod may have many.
type placed struct {
	path string
	kind mountKind
	// index is its place in the container's volumeMounts or volumeDevices;
	// volume and written name the volume and the path as the pod writes it.
	index           int
	volume, written string
	// sealed is a volume only the kubelet writes, with symlinks that stay
	// inside it (sealedVolumes): a mount under it lands under it.
	sealed bool
}

// place is p at the path it lands on, written, through links.
func place(p placed, written string, links map[string]string) placed {
	p.written = written
	p.path, _ = resolve(kubeletPath(written), links) // a loop leaves a path the runtime cannot mount either
	return p
}

// field is the pod's field that puts p in container c; the container for
// what the runtime adds. The prompt has none.
func (p placed) field(pod *corev1.Pod, c *corev1.Container) *field.Path {
	at := containerPath(pod, c)
	switch p.kind {
	case aVolume:
		return at.Child("volumeMounts").Index(p.index).Child("mountPath")
	case aDevice:
		return at.Child("volumeDevices").Index(p.index).Child("devicePath")
	case theTerminationMessage:
		return at.Child("terminationMessagePath")
	}
	return at
}

// String says what p is and where the pod puts it, for a refusal.
func (p placed) String() string {
	name, where := p.describe()
	return name + " is mounted at " + where
}

// describe is what p is, and where the pod puts it, for a refusal.
func (p placed) describe() (name, where string) {
	where = truncate(p.written)
	if clean := kubeletPath(p.written); p.path != clean {
		where += " (" + truncate(p.path) + " through the image's symlinks)"
	}
	switch p.kind {
	case aVolume:
		return "volume " + truncate(p.volume), where
	case aDevice:
		return "the device of volume " + truncate(p.volume), where
	case theTerminationMessage:
		return "the termination message file", where
	case theSharedMemory:
		return "the pod's shared memory", where
	case aRuntimeFile:
		return "the runtime's own file", where
	}
	return "the prompt", where
}

// sharedMemory is where the runtime mounts the pod's shared memory, a
// tmpfs every container of the pod may write.
const sharedMemory = "/dev/shm"

// runtimeFiles are what the kubelet and the runtimes mount in every
// container besides the pod's volumes: the kubelet's /etc files, CRI-O's
// /run/.containerenv (which the container may write) and /run/secrets.
// Nothing the pod writes is in them before the container starts, but a
// volume above one would lead its mount through a symlink, onto the prompt.
var runtimeFiles = []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run/.containerenv", "/run/secrets",
	// CRI-O's on a host in FIPS mode, in an image that has the FIPS
	// crypto-policies back-end; ordered with the pod's mounts by depth.
	"/etc/crypto-policies/config"}

// imageRuntimeDirs are runtime mounts of a directory of the agent image
// (CRI-O's FIPS back-ends, from the image's
// /usr/share/crypto-policies/back-ends/FIPS): its symlinks are the image
// author's, so nothing may be mounted under it. CRI-O does not leave them
// out for a volume at the same path.
var imageRuntimeDirs = []string{"/etc/crypto-policies/back-ends"}

// mountsOf are what the runtime mounts in c but the prompt, whose volumes
// sealed says are sealed. The kubelet mounts a file of its own at the
// termination message path, and a device node at a device's path: files
// the container writes, or the device's bytes. The runtime adds the pod's
// shared memory, unless a volume takes its place.
func mountsOf(c *corev1.Container, mountPath string, sealed map[string]bool, links map[string]string) []placed {
	var out []placed
	for j, m := range c.VolumeMounts {
		if !ownMount(m, mountPath) {
			out = append(out, place(placed{kind: aVolume, index: j, volume: m.Name, sealed: sealed[m.Name]}, m.MountPath, links))
		}
	}
	for j, d := range c.VolumeDevices {
		out = append(out, place(placed{kind: aDevice, index: j, volume: d.Name}, d.DevicePath, links))
	}
	if c.TerminationMessagePath != "" {
		out = append(out, place(placed{kind: theTerminationMessage}, c.TerminationMessagePath, links))
	}
	// A volume in a runtime mount's place replaces it.
	runtime := []placed{place(placed{kind: theSharedMemory}, sharedMemory, links)}
	for _, f := range runtimeFiles {
		runtime = append(runtime, place(placed{kind: aRuntimeFile, sealed: true}, f, links))
	}
	for _, r := range runtime {
		if !slices.ContainsFunc(out, func(m placed) bool { return m.path == r.path }) {
			out = append(out, r)
		}
	}
	for _, d := range imageRuntimeDirs {
		out = append(out, place(placed{kind: aRuntimeFile}, d, links))
	}
	return out
}

// shadows refuses, in each container that gets the prompt, what the
// runtime would mount over it. The runtime resolves a mount's path through
// the symlinks of what is mounted before it, and mounts the deeper paths
// later, so the path as written is not where a mount lands: each is judged
// where it leads through the image's symlinks (Config.ImageSymlinks).
// Refused (a mount here is a volume's, a device's, the termination message
// file's or the runtime's shared memory):
//   - a mount at or under the mount path (but the webhook's own): it would
//     hide the prompt's files, or (subPath) pin one of them;
//   - a mount under the kernel's links back into the container's own files
//     (kernelLinks): /proc/self/root/etc/persona is /etc/persona;
//   - the prompt's mount under another: a symlink there (an item path of a
//     ConfigMap is one) moves the prompt where another mount covers it;
//   - a mount under one whose files the pod or another may write (a PVC,
//     an emptyDir, an image, the shared memory): a symlink there leads
//     anywhere, onto the prompt too.
func shadows(pod *corev1.Pod, targets []*corev1.Container, mountPath string, cfg Config) field.ErrorList {
	var errs field.ErrorList
	refuse := func(p *field.Path, why string) bool {
		errs = append(errs, field.Forbidden(p, why))
		return len(errs) == maxRefusals // the mounts are the tenant's, of any number: the first ones tell the cause
	}
	links := cfg.symlinks()
	sealed := sealedVolumes(pod)
	persona := pod.Labels[PersonaLabel]
	prompt, _ := resolve(mountPath, links)
	for _, c := range targets {
		mounts := []placed{{path: prompt, kind: thePrompt, written: mountPath, sealed: true}}
		for _, m := range mountsOf(c, mountPath, sealed, visibleLinks(c, links)) {
			if hasDotDot(m.written) {
				if refuse(m.field(pod, c), fmt.Sprintf("%s, a path with a '..' element, in a container that gets the prompt of persona %s at %s: some runtimes apply it before the symlinks on the path, others after them (/var/run/.. is /var or /), so where it lands is not known; write the path without it",
					m, persona, mountPath)) {
					return errs
				}
				continue
			}
			if !underKernelLinks(m.path) {
				mounts = append(mounts, m)
			} else if refuse(m.field(pod, c), fmt.Sprintf("%s, under the kernel's links to the container's own files (/proc/self/root is its root): the runtime follows them, so it could shadow the prompt of persona %s at %s",
				m, persona, mountPath)) {
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
				if chain[len(chain)-1].kind == thePrompt {
					underPrompt = false
				}
				chain = chain[:len(chain)-1]
			}
			var where *field.Path
			var why string
			switch {
			case underPrompt:
				where = m.field(pod, c)
				why = fmt.Sprintf("%s, at or under %s where the prompt of persona %s is mounted: it would shadow the prompt (mount it elsewhere)",
					m, mountPath, persona)
			case m.kind == thePrompt && len(chain) > 0:
				outer := chain[len(chain)-1]
				where = outer.field(pod, c)
				why = fmt.Sprintf("%s, above %s where the prompt of persona %s is mounted: the runtime mounts the prompt through its files, where a symlink would move it under another mount; mount it beside %s, not above it",
					outer.placed, mountPath, persona, mountPath)
			case len(chain) > 0 && chain[len(chain)-1].unsealed != nil:
				outer := chain[len(chain)-1].unsealed
				where = m.field(pod, c)
				if m.kind == theSharedMemory || m.kind == aRuntimeFile {
					where = outer.field(pod, c) // the pod does not write this one
				}
				name, at := outer.describe()
				why = fmt.Sprintf("%s, under %s at %s, whose files the pod or another may write: the runtime mounts it through them, so a symlink there could land it on the prompt of persona %s at %s; mount it beside, not under (only a configMap, secret, downwardAPI or projected volume may hold mounts)",
					m, name, at, persona, mountPath)
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
			underPrompt = underPrompt || m.kind == thePrompt
			chain = append(chain, next)
		}
	}
	return errs
}

// visibleLinks are the symlinks of links that container c still has. A
// volume mounted above one replaces the image's directory there, and the
// symlink with it, by the volume's own files: an emptyDir at /var holds
// whatever the pod wrote as run, not the image's /var/run -> /run. The
// runtime mounts the volume first (it is shallower than any path through
// the symlink), so what is mounted through that path is judged under the
// volume instead.
func visibleLinks(c *corev1.Container, links map[string]string) map[string]string {
	// In the runtime's order (shallower first): each volume's path is
	// resolved through the symlinks the volumes before it left, and one that
	// lands in another volume (a ConfigMap at /var/run under one at /var)
	// hides none of the image's.
	paths := make([]string, 0, len(c.VolumeMounts))
	for _, m := range c.VolumeMounts {
		paths = append(paths, kubeletPath(m.MountPath))
	}
	slices.SortStableFunc(paths, func(a, b string) int { return cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")) })
	var mounted []string
	cloned := false
	for _, p := range paths {
		at, _ := resolve(p, links)
		inVolume := slices.ContainsFunc(mounted, func(v string) bool { return atOrUnder(at, v) })
		mounted = append(mounted, at)
		if inVolume {
			continue
		}
		for l := range links {
			if l != at && atOrUnder(l, at) {
				if !cloned {
					links, cloned = maps.Clone(links), true
				}
				delete(links, l)
			}
		}
	}
	return links
}

// kubeletPath is where the kubelet mounts mountPath: made absolute, then
// cleaned.
func kubeletPath(mountPath string) string {
	if !strings.HasPrefix(mountPath, "/") {
		mountPath = "/" + mountPath
	}
	return path.Clean(mountPath) // no copy when it is clean
}

// hasDotDot reports whether the path p has a '..' element.
func hasDotDot(p string) bool {
	for p != "" {
		var elem string
		elem, p, _ = strings.Cut(p, "/")
		if elem == ".." {
			return true
		}
	}
	return false
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
