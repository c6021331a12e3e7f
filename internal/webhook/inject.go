package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	personaadmission "github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/inject"
	"github.com/persona-operator/persona-operator/internal/release"
	"github.com/persona-operator/persona-operator/internal/render"
)

// InjectPath is where the pod injection is served, as config/webhook registers it.
const InjectPath = "/mutate--v1-pod"

// The objectSelector (the Persona label) and namespaceSelector are in
// config/webhook/inject_scope_patch.yaml: controller-gen has no marker for them.
// +kubebuilder:webhook:path=/mutate--v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpod.persona-operator.dev,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=5

// lookupTimeout bounds the wait for the caches of a starting manager, well
// within the webhook's timeout (5 s): past it the pod gets the live
// ConfigMap, which is always right, only not pinned.
const lookupTimeout = 2 * time.Second

// Injector injects the prompt of a pod's Persona (inject.Pod) from the
// facts of the manager's caches, never the API server: it answers for
// every pod create of the namespaces it serves.
type Injector struct {
	// Personas reads Personas: the manager's cache.
	Personas client.Reader
	// ConfigMaps reads the metadata of the operator's ConfigMaps but the
	// snapshots, Snapshots the snapshots: the controllers' caches of them.
	ConfigMaps client.Reader
	Snapshots  SnapshotReader
	// Namespaces are the namespaces served; none: all. A pod of another
	// is let through unchanged: another shard's.
	Namespaces []string
	// APIReader reads ConfigMaps' metadata from the API server, for the
	// few pods the caches cannot answer for: whether the snapshot of a
	// revision other than the current one and the running canary's, which
	// a pod template names, still exists (the cache may still hold one just
	// pruned, and a pod mounting it would never start); and whose a
	// persona-<name> is that the cache does not hold as its Persona's. Nil
	// trusts the cache, which then takes a ConfigMap it does not hold for
	// one that does not exist. It also reads the bundle.json of each
	// snapshot injected, once (launchReader); nil sets no launch variables.
	APIReader client.Reader
	// Config is the platform's part of the injection (the manager's flags).
	Config inject.Config

	launchOnce sync.Once
	launch     *launchReader
}

// launches reads the launch settings of snapshots; nil without an APIReader.
func (i *Injector) launches() *launchReader {
	i.launchOnce.Do(func() {
		if i.APIReader != nil {
			i.launch = newLaunchReader(i.APIReader)
		}
	})
	return i.launch
}

// SnapshotReader reads what the controllers' cache holds of a Persona's
// snapshots (kube.SnapshotCache): shared with it, not to be changed.
type SnapshotReader interface {
	SnapshotsOf(ctx context.Context, namespace, persona string) ([]*delivery.SnapshotMeta, error)
}

// RegisterInjection serves the pod injection on the manager's webhook server.
func RegisterInjection(mgr ctrl.Manager, delivered client.Reader, snapshots SnapshotReader, namespaces []string, cfg inject.Config) {
	mgr.GetWebhookServer().Register(InjectPath, (&Injector{
		Personas: mgr.GetCache(), ConfigMaps: delivered, Snapshots: snapshots, Namespaces: namespaces, APIReader: mgr.GetAPIReader(), Config: cfg,
	}).Handler())
}

// Handler serves the injection under the pod reviews' own memory bound,
// which weighs each review before it is read and again before it is
// decoded: anyone who reaches the port may send one.
func (i *Injector) Handler() http.Handler {
	return newPodInflight(PodInflightBytes, HeavyPodInflightBytes).wrap(&webhook.Admission{Handler: i})
}

// Handle implements admission.Handler.
func (i *Injector) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.Kind.Group != "" || req.Kind.Kind != "Pod" {
		return admission.Allowed("not a pod create")
	}
	if len(i.Namespaces) > 0 && !slices.Contains(i.Namespaces, req.Namespace) {
		return admission.Allowed("not a namespace this manager serves")
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the Pod %s", personaadmission.DecodeErrorDetail(err)))
	}
	name, ok := pod.Labels[inject.PersonaLabel]
	if !ok {
		return admission.Allowed("no persona label")
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	known, lookupErr := i.persona(ctx, req.Namespace, name)
	persona := known.facts
	if persona != nil {
		// Once a pod, decided by its review: the pod keeps what it got.
		persona.ToCanary = release.IsCanary(req.UID, known.canaryWeight)
	}
	var warnings []string
	if err := lookupErr; err != nil {
		warnings = append(warnings, fmt.Sprintf("the live ConfigMap %s is mounted: %v", delivery.ConfigMapName(name), err))
	}
	// The patch is computed from the pod as decoded, not from the raw
	// request: it then holds the injection alone, never a field this
	// client's types do not know (which a round trip would drop) nor a
	// value they encode otherwise.
	original, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode the pod: %w", err))
	}
	res, errs := inject.Pod(pod, persona, i.Config)
	if len(errs) == 0 && i.pruned(ctx, req.Namespace, name, persona, res.Revision) {
		delete(persona.Snapshots, res.Revision)
		pod = &corev1.Pod{}
		if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("the Pod %s", personaadmission.DecodeErrorDetail(err)))
		}
		res, errs = inject.Pod(pod, persona, i.Config)
	}
	if len(errs) == 0 {
		var err error
		if errs, err = i.notThePersonas(ctx, req.Namespace, name, known, res.Mounts); err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
	}
	if len(errs) > 0 {
		podName := pod.Name
		if podName == "" {
			podName = pod.GenerateName
		}
		return refusal(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), podName, errs)
	}
	if !res.Changed {
		return admission.Allowed("the pod mounts the prompt of persona " + name + " itself")
	}
	if warning := i.setLaunch(ctx, req.Namespace, name, known, res); warning != "" {
		warnings = append(warnings, warning)
	}
	mutated, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode the pod: %w", err))
	}
	resp := admission.PatchResponseFromRaw(original, mutated)
	resp.Warnings = warnings
	return resp
}

// setLaunch sets the launch variables of a pod injected with a snapshot,
// read from the snapshot's bundle.json; a pod of the live ConfigMap gets
// none (its values change under it). What cannot be read is left unset,
// with the warning it returns: the launcher then reads bundle.json.
func (i *Injector) setLaunch(ctx context.Context, namespace, name string, k known, res inject.Result) string {
	if res.Revision <= 0 || i.launches() == nil {
		return ""
	}
	snapshot := delivery.SnapshotName(name, res.Revision)
	unset := fmt.Sprintf("%s, %s, %s and %s are not set (read them from %s)",
		inject.EnvHarness, inject.EnvModel, inject.EnvReasoningEffort, inject.EnvHarnessPrompt, render.BundleKey)
	launches, err := i.launches().launches(ctx, namespace, snapshot, k.snapshots[res.Revision])
	if err != nil {
		return fmt.Sprintf("%s: %v", unset, err)
	}
	l, ok := launches.For(res.Variant)
	if !ok {
		return fmt.Sprintf("%s: revision %d of persona %s has no variant %s", unset, res.Revision, name, res.Variant)
	}
	res.SetLaunch(l)
	return ""
}

// known is what the caches know of a pod's Persona.
type known struct {
	// facts are inject.Pod's; nil when the Persona does not exist, is
	// being deleted, or the caches cannot say yet.
	facts *inject.Persona
	// uid is the Persona's; empty when it does not exist. unsure: the
	// caches could not say whether it does.
	uid    types.UID
	unsure bool
	// controlled are the ConfigMaps the cache holds as the Persona's: its
	// controller by UID.
	controlled map[string]bool
	// snapshots are the UIDs of the Persona's snapshots, by revision.
	snapshots map[int64]types.UID
	// canaryWeight is the share of new pods, in percent, that get the
	// revision of the canary that runs.
	canaryWeight int32
}

// persona is what the caches know of the Persona name of namespace, with
// the error, for a warning, when they cannot say all of it.
func (i *Injector) persona(ctx context.Context, namespace, name string) (known, error) {
	var p v1alpha1.Persona
	switch err := i.Personas.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); {
	case apierrors.IsNotFound(err):
		return known{}, nil
	case err != nil:
		return known{unsure: true}, fmt.Errorf("read persona %s: %w", name, err)
	}
	if p.DeletionTimestamp != nil {
		return known{uid: p.UID}, nil
	}
	facts := &inject.Persona{CurrentRevision: p.Status.CurrentRevision, Snapshots: map[int64]string{}}
	out := known{facts: facts, uid: p.UID, controlled: map[string]bool{}, snapshots: map[int64]types.UID{}}
	if c := p.Status.Canary; c != nil && c.Phase != v1alpha1.CanaryAborted {
		facts.Canary, out.canaryWeight = c.Revision, c.Weight
	}
	for _, v := range p.Spec.Variants {
		facts.Variants = append(facts.Variants, v.Name)
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	switch err := i.ConfigMaps.Get(ctx, client.ObjectKey{Namespace: namespace, Name: delivery.ConfigMapName(name)}, live); {
	case err == nil:
		if owner := metav1.GetControllerOfNoCopy(live); owner != nil && owner.UID == p.UID && live.DeletionTimestamp == nil {
			out.controlled[live.Name] = true
		}
	case !apierrors.IsNotFound(err):
		facts.CurrentRevision = 0 // as below
		return out, fmt.Errorf("read the ConfigMap of persona %s: %w", name, err)
	}
	snapshots, err := i.Snapshots.SnapshotsOf(ctx, namespace, name)
	if err != nil {
		// Without the snapshots the current revision is not known to be
		// there: the live ConfigMap.
		facts.CurrentRevision = 0
		return out, fmt.Errorf("list the snapshots of persona %s: %w", name, err)
	}
	for _, m := range snapshots {
		if !m.IsSnapshotOf(&p, m.Revision) || m.Deleting {
			continue
		}
		out.controlled[m.Name] = true
		facts.Snapshots[m.Revision] = m.Guardrails
		out.snapshots[m.Revision] = m.UID
	}
	return out, nil
}

// notThePersonas refuses mounts of ConfigMaps that exist and that the
// Persona name does not control: a persona-<name> written by someone else
// before the ConfigMap policy kept the name for the operator, or one left
// by kubectl delete persona --cascade=orphan. Those the cache holds as the
// Persona's cost nothing; any other is read from the API server, which
// only pods of a missing Persona, of one in ConfigMapConflict, or of a
// manager still starting need. One that does not exist is let through:
// a pod created before its Persona starts once the Persona renders its
// ConfigMap, which only the operator may then create.
func (i *Injector) notThePersonas(ctx context.Context, namespace, name string, k known, mounts []inject.Mount) (field.ErrorList, error) {
	var errs field.ErrorList
	for _, m := range mounts {
		if k.controlled[m.ConfigMap] || i.APIReader == nil {
			continue
		}
		cm := &metav1.PartialObjectMetadata{}
		cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		switch err := i.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: m.ConfigMap}, cm); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("read ConfigMap %s, to tell whether persona %s controls it: %w", m.ConfigMap, name, err)
		}
		owner := metav1.GetControllerOfNoCopy(cm)
		// Only a ConfigMap of the shape the operator writes is the
		// Persona's, as the cache of the snapshots holds them: its live
		// ConfigMap, or a snapshot with a snapshot's labels.
		operators := delivery.IsLiveConfigMap(cm) || delivery.IsSnapshot(cm)
		switch {
		case operators && k.uid != "" && owner.UID == k.uid:
			continue
		case operators && k.unsure && owner.Kind == "Persona" && owner.Name == name &&
			strings.HasPrefix(owner.APIVersion, v1alpha1.GroupVersion.Group+"/"):
			// A manager still starting cannot read the Persona's UID. Only
			// the operator may make a Persona a ConfigMap's controller, and
			// the garbage collector deletes a ConfigMap whose controller is
			// gone.
			continue
		}
		whose := "no Persona " + name + " exists to control it"
		if k.uid != "" || k.unsure {
			whose = "persona " + name + " does not control it"
		}
		errs = append(errs, field.Forbidden(m.Field, fmt.Sprintf(
			"ConfigMap %s is not the prompt of persona %s: it exists and %s (persona-<name> ConfigMaps are written only by persona-operator: delete it, and the Persona renders its own)",
			m.ConfigMap, name, whose)))
	}
	return errs, nil
}

// pruned reports whether revision, which a pod template names and which is
// neither the current one nor the running canary's, has lost its snapshot
// since the cache saw it: only such pods (an old ReplicaSet's, during a
// rollout) read the API server. The controller keeps the snapshots of the
// current revision and of the canary's (status.latestRevision) while the
// status names them, so the cache's word is taken for both alike: the
// canary's share of the new pods costs no read per pod.
func (i *Injector) pruned(ctx context.Context, namespace, name string, p *inject.Persona, revision int64) bool {
	if i.APIReader == nil || p == nil || revision == 0 || revision == p.CurrentRevision || revision == p.Canary {
		return false
	}
	snapshot := &metav1.PartialObjectMetadata{}
	snapshot.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	err := i.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: delivery.SnapshotName(name, revision)}, snapshot)
	return apierrors.IsNotFound(err) || err == nil && snapshot.DeletionTimestamp != nil
}
