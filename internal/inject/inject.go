// Package inject is the pod injection of delivery.md#injection: what the
// mutating webhook adds to a pod labelled prompts.persona-operator.dev/persona,
// which revision it gets, and what it refuses. It is pure: the webhook
// gathers the Persona's facts from the manager's caches and calls Pod.
package inject

import (
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The pod's label and annotations that ask for and shape the injection.
const (
	// PersonaLabel names the Persona; the webhook's objectSelector sends it
	// only pods that carry it.
	PersonaLabel = delivery.PersonaLabel
	// DeliveryAnnotation is "live" for the mutable persona-<name>, or
	// "snapshot" (the default) for the chosen revision's snapshot.
	DeliveryAnnotation = "prompts.persona-operator.dev/delivery"
	// MountPathAnnotation is where the prompt is mounted, one of
	// Config.MountPaths; the first of them without it.
	MountPathAnnotation = "prompts.persona-operator.dev/mount-path"
	// ContainersAnnotation lists, comma-separated, the containers (or init
	// containers) that get the mount; every container without it.
	ContainersAnnotation = "prompts.persona-operator.dev/containers"
	// VariantAnnotation names the variant whose file PERSONA_PROMPT_FILE is.
	VariantAnnotation = "prompts.persona-operator.dev/variant"
	// RevisionAnnotation and RevisionLabel name the pod's revision: on a pod
	// template the revision asked for, on an injected pod the one it got.
	RevisionAnnotation = delivery.RevisionAnnotation
	RevisionLabel      = delivery.RevisionLabel
	// TrackLabel says whether the pod's revision is a canary's or the
	// stable one, so that its metrics can be split by it.
	TrackLabel = v1alpha1.TrackLabel
)

// The values of DeliveryAnnotation.
const (
	DeliveryLive     = "live"
	DeliverySnapshot = "snapshot"
)

// DefaultMountPath is Config.MountPaths without any: where the prompt is
// mounted, and the only path MountPathAnnotation may name.
const DefaultMountPath = "/etc/persona"

// VolumeName is the name of the volume the webhook adds.
const VolumeName = "persona-prompt"

// The environment variables the webhook sets in each container it mounts into.
const (
	EnvName       = "PERSONA_NAME"
	EnvPromptFile = "PERSONA_PROMPT_FILE"
	EnvBundleFile = "PERSONA_BUNDLE_FILE"
	EnvRevision   = "PERSONA_REVISION"
)

// The launch variables: what a launcher reads of the mounted revision's
// bundle.json to start the harness (Result.SetLaunch). Set with a snapshot
// only, whose values never change; a live mount's change under the pod.
const (
	EnvHarness         = "PERSONA_HARNESS"
	EnvModel           = "PERSONA_MODEL"
	EnvReasoningEffort = "PERSONA_REASONING_EFFORT"
	EnvHarnessPrompt   = "PERSONA_HARNESS_PROMPT"
)

// envNames are the variables the webhook owns: any the pod sets itself go.
var envNames = []string{EnvName, EnvPromptFile, EnvBundleFile, EnvRevision, EnvHarness, EnvModel, EnvReasoningEffort, EnvHarnessPrompt}

// maxMountPath bounds a mount path of Config.MountPaths: the kubelet's own
// limit on a path is the node's, far above any real mount point.
const maxMountPath = 256

// The bounds of what a pod may ask of the webhook, which sees a pod before
// the API server validates it: its containers (init containers included),
// the containers annotation, and the refusals one answer lists. Within them
// an injection costs microseconds, whatever the pod.
const (
	maxContainers           = 128
	maxContainersAnnotation = 4096
	maxRefusals             = 10
	// maxHandMounts bounds the Persona's ConfigMaps a pod mounts by hand:
	// the webhook may read each from the API server (Result.Mounts).
	maxHandMounts = 10
)

// namePattern is a Persona's and a variant's name (personas.md#writing-a-persona-spec).
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// Persona is what the webhook knows of the pod's Persona, from the caches.
type Persona struct {
	// Variants are the names of spec.variants.
	Variants []string
	// CurrentRevision is status.currentRevision; 0 while it has none.
	CurrentRevision int64
	// Snapshots are the Persona's snapshots the cache holds, by revision:
	// the identity of the guardrails each was rendered with (§14.5's
	// sameness: the prompts.persona-operator.dev/guardrails annotation).
	Snapshots map[int64]string
	// Canary is the revision of the canary that runs (status.canary), 0
	// without one; ToCanary is set when the pod, unless it names a
	// revision, gets it rather than the current one (the webhook's choice,
	// by the canary's weight).
	Canary   int64
	ToCanary bool
}

// Result is what Pod did.
type Result struct {
	// Changed is false when the pod was left as it came: it mounts its
	// Persona's ConfigMap by hand.
	Changed bool
	// Revision is the revision mounted; 0 for the live ConfigMap.
	Revision int64
	// Variant is the variant whose prompt PERSONA_PROMPT_FILE names; empty:
	// the persona's own.
	Variant string
	// Mounts are the Persona's ConfigMaps the pod mounts, injected or by
	// hand, each once. Pod cannot tell whose they are: the caller refuses
	// the pod when one exists that the Persona does not control (a
	// persona-<name> written before the ConfigMap policy guarded the name).
	Mounts []Mount
	// targets are the containers that got the prompt.
	targets []*corev1.Container
}

// SetLaunch sets the launch variables, l (the mounted revision's settings
// of the prompt the pod reads), in each container that got the prompt.
// Only for a snapshot: Pod leaves them unset for the live ConfigMap, and
// so does the caller that cannot read the snapshot's bundle.json. An empty
// value is set empty.
func (r Result) SetLaunch(l render.Launch) {
	if r.Revision <= 0 {
		return
	}
	launch := []string{EnvHarness, EnvModel, EnvReasoningEffort, EnvHarnessPrompt}
	for _, c := range r.targets {
		c.Env = append(slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return slices.Contains(launch, e.Name) }),
			corev1.EnvVar{Name: EnvHarness, Value: l.Harness},
			corev1.EnvVar{Name: EnvModel, Value: l.Model},
			corev1.EnvVar{Name: EnvReasoningEffort, Value: l.ReasoningEffort},
			corev1.EnvVar{Name: EnvHarnessPrompt, Value: l.HarnessPrompt},
		)
	}
}

// Mount is a ConfigMap of the Persona that a pod mounts, and the field that
// names it, for a refusal.
type Mount struct {
	ConfigMap string
	Field     *field.Path
}

// Pod injects the prompt of the Persona its label names into pod, in place.
// persona is nil when the Persona does not exist (or the cache does not
// know it yet). The errors name the cause; the pod is then unchanged.
// Called again on its own output (reinvocation) it changes nothing more.
func Pod(pod *corev1.Pod, persona *Persona, cfg Config) (Result, field.ErrorList) {
	name, labelled := pod.Labels[PersonaLabel]
	if !labelled {
		return Result{}, nil
	}
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers); n > maxContainers {
		return Result{}, field.ErrorList{field.TooMany(field.NewPath("spec", "containers"), n, maxContainers)}
	}
	revision, own, errs := injectedRevision(pod, name)
	if len(errs) > 0 {
		return Result{}, errs
	}
	hand, errs := handMounts(pod, name)
	if len(errs) > 0 {
		return Result{}, errs
	}
	if len(hand) > 0 && own {
		// The webhook never adds its volume to a pod that mounts the
		// prompt by hand, so this pod wrote it itself: left alone, it would
		// keep whatever revision it names.
		return Result{}, field.ErrorList{field.Forbidden(field.NewPath("spec", "volumes").Key(VolumeName),
			"the pod mounts the prompt of persona "+name+" by hand, so the webhook injects nothing: the volume "+VolumeName+" is the webhook's; mount the prompt one way")}
	}
	if len(hand) > 0 {
		return Result{Mounts: hand}, nil
	}
	opts, errs := readOptions(pod, name, cfg)
	if len(errs) > 0 {
		return Result{}, errs
	}
	if persona != nil && opts.variant != "" && !slices.Contains(persona.Variants, opts.variant) {
		return Result{}, field.ErrorList{field.NotFound(annotationPath(VariantAnnotation),
			fmt.Sprintf("%s: persona %s has no such variant (it has %s)", opts.variant, name, listOrNone(persona.Variants)))}
	}
	targets, errs := targetContainers(pod, opts.containers)
	if len(errs) > 0 {
		return Result{}, errs
	}
	// On reinvocation the choice stands, unless the volume names a
	// revision the pod may not have: a pod written with the webhook's
	// volume by hand gets no older guardrails than any other.
	rechoose := own && revision > 0 && (opts.live || !allowed(persona, revision))
	if !own || rechoose {
		revision = chooseRevision(persona, opts)
	}
	if errs := shadows(pod, targets, opts.mountPath, cfg); len(errs) > 0 {
		return Result{}, errs
	}
	others := otherContainers(pod, targets)
	if errs := borrowedVariables(pod, others, opts); len(errs) > 0 {
		return Result{}, errs
	}
	configMap := delivery.ConfigMapName(name)
	if revision > 0 {
		configMap = delivery.SnapshotName(name, revision)
	}
	switch {
	case !own:
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: VolumeName, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
		}})
	case rechoose:
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == VolumeName {
				pod.Spec.Volumes[i].ConfigMap.Name = configMap
			}
		}
	}
	env := environment(name, opts, revision)
	for _, c := range targets {
		mountInto(c, opts.mountPath)
		c.Env = append(slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return slices.Contains(envNames, e.Name) }), env...)
		if len(c.EnvFrom) > 0 {
			// The variables it sets no value of here (a live mount's
			// revision and launch settings) are set empty, which wins over
			// envFrom.
			for _, n := range envNames {
				if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == n }) {
					c.Env = append(c.Env, corev1.EnvVar{Name: n})
				}
			}
		}
	}
	hideVariables(others)
	if revision > 0 {
		n := strconv.FormatInt(revision, 10)
		pod.Labels[RevisionLabel] = n
		pod.Labels[TrackLabel] = track(persona, revision)
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[RevisionAnnotation] = n
	} else {
		// A live mount's revision changes under it: no label counts it.
		delete(pod.Labels, RevisionLabel)
		delete(pod.Labels, TrackLabel)
		delete(pod.Annotations, RevisionAnnotation)
	}
	return Result{Changed: true, Revision: revision, Variant: opts.variant, targets: targets,
		Mounts: []Mount{{ConfigMap: configMap, Field: field.NewPath("metadata", "labels").Key(PersonaLabel)}}}, nil
}

// options are the pod's annotations, parsed.
type options struct {
	live       bool
	mountPath  string
	containers []string // nil: every container
	variant    string
	revision   int64 // the revision the template names; 0: none
}

func readOptions(pod *corev1.Pod, name string, cfg Config) (options, field.ErrorList) {
	var errs field.ErrorList
	if !namePattern.MatchString(name) || strings.HasSuffix(name, "-") {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "labels").Key(PersonaLabel), truncate(name),
			"must name a Persona: a lower-case letter, then up to 62 lower-case letters, digits or '-', not ending with '-'"))
	}
	a := pod.Annotations
	mountPaths := cfg.mountPaths()
	opts := options{mountPath: mountPaths[0]}
	switch v, ok := a[DeliveryAnnotation]; {
	case !ok || v == DeliverySnapshot:
	case v == DeliveryLive:
		opts.live = true
	default:
		errs = append(errs, field.NotSupported(annotationPath(DeliveryAnnotation), truncate(v), []string{DeliveryLive, DeliverySnapshot}))
	}
	if v, ok := a[MountPathAnnotation]; ok {
		if !slices.Contains(mountPaths, v) {
			// The platform's choice (Config.MountPaths): it knows its images' symlinks.
			errs = append(errs, field.NotSupported(annotationPath(MountPathAnnotation), truncate(v), mountPaths))
		} else {
			opts.mountPath = v
		}
	}
	if v, ok := a[ContainersAnnotation]; ok && len(v) > maxContainersAnnotation {
		errs = append(errs, field.TooLong(annotationPath(ContainersAnnotation), truncate(v), maxContainersAnnotation))
	} else if ok {
		names := strings.Split(v, ",")
		for i := range names {
			names[i] = strings.TrimSpace(names[i])
		}
		if slices.Contains(names, "") {
			errs = append(errs, field.Invalid(annotationPath(ContainersAnnotation), truncate(v), "must be a comma-separated list of container names"))
		} else {
			opts.containers = names
		}
	}
	if v, ok := a[VariantAnnotation]; ok {
		if !namePattern.MatchString(v) {
			errs = append(errs, field.Invalid(annotationPath(VariantAnnotation), truncate(v), "must name a variant: a lower-case letter, then up to 62 lower-case letters, digits or '-'"))
		} else {
			opts.variant = v
		}
	}
	if v, ok := a[RevisionAnnotation]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || strconv.FormatInt(n, 10) != v {
			errs = append(errs, field.Invalid(annotationPath(RevisionAnnotation), truncate(v), "must be a revision: a positive integer"))
		} else {
			opts.revision = n
		}
	}
	return opts, errs
}

// handMounts are the Persona's ConfigMaps (the live one or its snapshots)
// the pod mounts in volumes of its own: such a workload predates injection
// and keeps working as it is, when it mounts the whole ConfigMap. With items,
// beside other sources in a projection, or mounted by subPath, the pod picks
// the files it reads (the persona body without the guardrails, say):
// refused, naming the field. No container may mount the webhook's volume
// by subPath either, whether the pod has it yet or not: it would pin one of
// its files, which a live mount then never updates.
func handMounts(pod *corev1.Pod, name string) ([]Mount, field.ErrorList) {
	var mounts []Mount
	var errs field.ErrorList
	// what says how the pod picks files of a ConfigMap of the Persona.
	refuse := func(p *field.Path, what string) {
		if len(errs) < maxRefusals { // the volumes are the tenant's, of any number: the first ones tell the cause
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s, a ConfigMap of persona %s: a pod may mount one only whole, with no items nor subPath (or let the webhook inject the prompt)", what, name)))
		}
	}
	add := func(configMap string, p *field.Path) {
		// Past the bound the pod is refused: no need to count further.
		if len(mounts) <= maxHandMounts && !slices.ContainsFunc(mounts, func(m Mount) bool { return m.ConfigMap == configMap }) {
			mounts = append(mounts, Mount{ConfigMap: configMap, Field: p})
		}
	}
	// The volumes that mount one, by name; the webhook's before it adds it
	// too, since the mounts that name it will then mount it.
	mounting := map[string]bool{VolumeName: true}
	for i, v := range pod.Spec.Volumes {
		if v.Name == VolumeName {
			continue // the webhook's own, on reinvocation: injectedRevision
		}
		p := field.NewPath("spec", "volumes").Index(i)
		if cm := v.ConfigMap; cm != nil && personas(cm.Name, name) {
			add(cm.Name, p.Child("configMap", "name"))
			mounting[v.Name] = true
			if len(cm.Items) > 0 {
				refuse(p.Child("configMap", "items"), "volume "+v.Name+" picks items of "+truncate(cm.Name))
			}
		}
		if v.Projected == nil {
			continue
		}
		for k, s := range v.Projected.Sources {
			if s.ConfigMap == nil || !personas(s.ConfigMap.Name, name) {
				continue
			}
			sp := p.Child("projected", "sources").Index(k).Child("configMap")
			add(s.ConfigMap.Name, sp.Child("name"))
			if !mounting[v.Name] && len(v.Projected.Sources) > 1 {
				refuse(p.Child("projected", "sources"), "volume "+v.Name+" projects other sources beside "+truncate(s.ConfigMap.Name))
			}
			mounting[v.Name] = true
			if len(s.ConfigMap.Items) > 0 {
				refuse(sp.Child("items"), "volume "+v.Name+" picks items of "+truncate(s.ConfigMap.Name))
			}
		}
	}
	if len(mounts) > maxHandMounts {
		return nil, field.ErrorList{field.Forbidden(field.NewPath("spec", "volumes"),
			fmt.Sprintf("the pod mounts more than %d ConfigMaps of persona %s by hand", maxHandMounts, name))}
	}
	for _, list := range []struct {
		path       *field.Path
		containers []corev1.Container
	}{{field.NewPath("spec", "initContainers"), pod.Spec.InitContainers}, {field.NewPath("spec", "containers"), pod.Spec.Containers}} {
		for i, c := range list.containers {
			for j, m := range c.VolumeMounts {
				// Most pods mount none by hand: no lookup for them.
				if m.Name != VolumeName && (len(mounting) == 1 || !mounting[m.Name]) {
					continue
				}
				p := list.path.Index(i).Child("volumeMounts").Index(j)
				if m.SubPath != "" {
					refuse(p.Child("subPath"), "container "+truncate(c.Name)+" mounts subPath "+truncate(m.SubPath)+" of volume "+truncate(m.Name))
				}
				if m.SubPathExpr != "" {
					refuse(p.Child("subPathExpr"), "container "+truncate(c.Name)+" mounts subPathExpr "+truncate(m.SubPathExpr)+" of volume "+truncate(m.Name))
				}
			}
		}
	}
	return mounts, errs
}

// personas reports whether configMap is the Persona name's: its live
// ConfigMap or one of its snapshots.
func personas(configMap, name string) bool {
	persona, _, ok := delivery.SnapshotOf(configMap)
	return configMap == delivery.ConfigMapName(name) || ok && persona == name
}

// injectedRevision is the revision of the webhook's own volume when the pod
// already has it (reinvocation: the choice stands); own is false without
// it. The webhook owns the volume's name whole: a volume of that name is
// its own only when it is exactly what it writes, which a pod's hand-written
// copy cannot be told from, so no copy gets more than the webhook would give
// (injection re-judges its revision). Any other is refused.
func injectedRevision(pod *corev1.Pod, name string) (revision int64, own bool, errs field.ErrorList) {
	for i, v := range pod.Spec.Volumes {
		if v.Name != VolumeName {
			continue
		}
		if err := ownVolume(v, field.NewPath("spec", "volumes").Index(i), name); err != nil {
			return 0, false, field.ErrorList{err}
		}
		if _, n, ok := delivery.SnapshotOf(v.ConfigMap.Name); ok {
			return n, true, nil
		}
		return 0, true, nil
	}
	return 0, false, nil
}

// ownVolume is the refusal of a volume named VolumeName that is not what
// the webhook writes: a plain configMap source naming the Persona's live
// ConfigMap or one of its snapshots, without items or optional, its
// defaultMode unset or the API server's default.
func ownVolume(v corev1.Volume, p *field.Path, name string) *field.Error {
	taken := VolumeName + " is the volume the webhook injects the prompt of persona " + name + " in, and no pod's own: "
	cm := v.ConfigMap
	switch {
	case cm == nil || v.VolumeSource != (corev1.VolumeSource{ConfigMap: cm}):
		return field.Forbidden(p.Child(otherSource(v.VolumeSource)), taken+"it mounts a configMap alone (name the pod's volume otherwise)")
	case !personas(cm.Name, name):
		return field.Forbidden(p.Child("configMap", "name"), taken+"it mounts "+delivery.ConfigMapName(name)+" or one of its snapshots, not "+truncate(cm.Name))
	case len(cm.Items) > 0:
		return field.Forbidden(p.Child("configMap", "items"), taken+"it mounts the whole ConfigMap")
	case cm.Optional != nil:
		return field.Forbidden(p.Child("configMap", "optional"), taken+"it sets no optional")
	case cm.DefaultMode != nil && *cm.DefaultMode != corev1.ConfigMapVolumeSourceDefaultMode:
		return field.Forbidden(p.Child("configMap", "defaultMode"), taken+"it leaves defaultMode to the API server's default, 0644")
	}
	return nil
}

// otherSource is the field name of a volume source set beside or instead
// of configMap; with none at all, the volume's name is what is taken.
func otherSource(s corev1.VolumeSource) string {
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.Name != "ConfigMap" && !v.Field(i).IsNil() {
			return strings.Split(f.Tag.Get("json"), ",")[0]
		}
	}
	return "name"
}

// chooseRevision is delivery.md#which-revision: the template's revision if
// its snapshot exists with the current guardrails, else the canary's when
// the pod was chosen for it and its snapshot is there with them, else the
// current one; 0, the live ConfigMap, when asked for, or with no Persona,
// no revision yet or no snapshot of it in the cache.
func chooseRevision(p *Persona, opts options) int64 {
	if opts.live || p == nil || p.CurrentRevision <= 0 {
		return 0
	}
	if _, ok := p.Snapshots[p.CurrentRevision]; !ok {
		return 0
	}
	if opts.revision > 0 && allowed(p, opts.revision) {
		return opts.revision
	}
	if p.ToCanary && p.Canary > 0 && allowed(p, p.Canary) {
		return p.Canary
	}
	return p.CurrentRevision
}

// track is the TrackLabel of a pod that mounts revision n: canary for the
// revision of the canary that runs, stable for any other.
func track(p *Persona, n int64) string {
	if p != nil && p.Canary > 0 && n == p.Canary {
		return v1alpha1.TrackCanary
	}
	return v1alpha1.TrackStable
}

// allowed reports whether a pod may mount revision n: its snapshot is in
// the cache, rendered with the current revision's guardrails.
func allowed(p *Persona, n int64) bool {
	if p == nil || p.CurrentRevision <= 0 {
		return false
	}
	current, ok := p.Snapshots[p.CurrentRevision]
	named, found := p.Snapshots[n]
	return ok && found && named == current
}

// targetContainers are the containers that get the mount: every container,
// or those the annotation names, which may be init containers too.
func targetContainers(pod *corev1.Pod, names []string) ([]*corev1.Container, field.ErrorList) {
	if names == nil {
		out := make([]*corev1.Container, len(pod.Spec.Containers))
		for i := range pod.Spec.Containers {
			out[i] = &pod.Spec.Containers[i]
		}
		return out, nil
	}
	var out []*corev1.Container
	for _, n := range names {
		c := containerNamed(pod, n)
		if c == nil {
			// The first unknown name only: the list is the tenant's, of any length.
			return nil, field.ErrorList{field.NotFound(annotationPath(ContainersAnnotation), truncate(n))}
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func containerNamed(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// mountInto adds the read-only mount of the prompt to c, once.
func mountInto(c *corev1.Container, mountPath string) {
	if slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return ownMount(m, mountPath) }) {
		return
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: VolumeName, MountPath: mountPath, ReadOnly: true})
}

// otherContainers are the pod's containers, init containers included, that
// do not get the prompt.
func otherContainers(pod *corev1.Pod, targets []*corev1.Container) []*corev1.Container {
	var out []*corev1.Container
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !slices.Contains(targets, &list[i]) {
				out = append(out, &list[i])
			}
		}
	}
	return out
}

// borrowedVariables refuses a container that does not get the prompt but
// sets a variable of the webhook's: a harness there would take the file it
// names, the pod's own, for the operator's. An empty one is what the
// webhook itself sets there (hideVariables).
func borrowedVariables(pod *corev1.Pod, others []*corev1.Container, opts options) field.ErrorList {
	var errs field.ErrorList
	which := "the pod's containers get it, not its init containers"
	if opts.containers != nil {
		which = "only the containers that the annotation " + ContainersAnnotation + " names get it"
	}
	for _, c := range others {
		for j, e := range c.Env {
			if !slices.Contains(envNames, e.Name) || e.Value == "" && e.ValueFrom == nil {
				continue
			}
			errs = append(errs, field.Forbidden(containerPath(pod, c).Child("env").Index(j).Child("name"),
				fmt.Sprintf("container %s does not get the prompt of persona %s (%s), so it may not set %s: the webhook sets it where it mounts the prompt; drop it, or have the container get the prompt",
					truncate(c.Name), pod.Labels[PersonaLabel], which, e.Name)))
			if len(errs) == maxRefusals {
				return errs // the containers are the tenant's, of any number
			}
		}
	}
	return errs
}

// hideVariables sets the webhook's variables empty in each container that
// reads variables from a ConfigMap or Secret without getting the prompt:
// an env entry wins over envFrom, so none of the pod's reaches a harness
// there as if the webhook had set it.
func hideVariables(others []*corev1.Container) {
	for _, c := range others {
		if len(c.EnvFrom) == 0 {
			continue
		}
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return slices.Contains(envNames, e.Name) })
		for _, n := range envNames {
			c.Env = append(c.Env, corev1.EnvVar{Name: n})
		}
	}
}

// environment is the variables each target container gets.
func environment(name string, opts options, revision int64) []corev1.EnvVar {
	prompt := render.SystemPromptKey
	if opts.variant != "" {
		prompt = render.VariantKey(opts.variant)
	}
	env := []corev1.EnvVar{
		{Name: EnvName, Value: name},
		{Name: EnvPromptFile, Value: path.Join(opts.mountPath, prompt)},
		{Name: EnvBundleFile, Value: path.Join(opts.mountPath, render.BundleKey)},
	}
	if revision > 0 {
		env = append(env, corev1.EnvVar{Name: EnvRevision, Value: strconv.FormatInt(revision, 10)})
	}
	return env
}

func containerPath(pod *corev1.Pod, c *corev1.Container) *field.Path {
	for i := range pod.Spec.Containers {
		if &pod.Spec.Containers[i] == c {
			return field.NewPath("spec", "containers").Index(i)
		}
	}
	for i := range pod.Spec.InitContainers {
		if &pod.Spec.InitContainers[i] == c {
			return field.NewPath("spec", "initContainers").Index(i)
		}
	}
	return field.NewPath("spec", "containers")
}

func annotationPath(key string) *field.Path {
	return field.NewPath("metadata", "annotations").Key(key)
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// truncate bounds a tenant's value quoted back in a message.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
