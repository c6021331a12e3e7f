package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	personaadmission "github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/inject"
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
	// ConfigMaps reads the metadata of the operator's ConfigMaps, the
	// snapshots among them: the controllers' cache of them.
	ConfigMaps client.Reader
	// Namespaces are the namespaces served; none: all. A pod of another
	// is let through unchanged: another shard's.
	Namespaces []string
	// Snapshots reads ConfigMaps from the API server: whether the snapshot
	// of a revision other than the current one, which a pod template
	// names, still exists. The cache may still hold one just pruned, and
	// a pod mounting it would never start. Nil trusts the cache.
	Snapshots client.Reader
}

// RegisterInjection serves the pod injection on the manager's webhook server.
func RegisterInjection(mgr ctrl.Manager, delivered client.Reader, namespaces []string) {
	mgr.GetWebhookServer().Register(InjectPath, (&Injector{
		Personas: mgr.GetCache(), ConfigMaps: delivered, Namespaces: namespaces, Snapshots: mgr.GetAPIReader(),
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
	persona, lookupErr := i.persona(ctx, req.Namespace, name)
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
	res, errs := inject.Pod(pod, persona)
	if len(errs) == 0 && i.pruned(ctx, req.Namespace, name, persona, res.Revision) {
		delete(persona.Snapshots, res.Revision)
		pod = &corev1.Pod{}
		if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("the Pod %s", personaadmission.DecodeErrorDetail(err)))
		}
		res, errs = inject.Pod(pod, persona)
	}
	if len(errs) > 0 {
		podName := pod.Name
		if podName == "" {
			podName = pod.GenerateName
		}
		status := apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), podName, errs).Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
	}
	if !res.Changed {
		return admission.Allowed("the pod mounts the prompt of persona " + name + " itself")
	}
	mutated, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode the pod: %w", err))
	}
	resp := admission.PatchResponseFromRaw(original, mutated)
	resp.Warnings = warnings
	return resp
}

// persona is what the caches know of the Persona name of namespace: nil
// when it does not exist, is being deleted, or the caches cannot say yet
// (then with the error, for a warning).
func (i *Injector) persona(ctx context.Context, namespace, name string) (*inject.Persona, error) {
	var p v1alpha1.Persona
	switch err := i.Personas.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read persona %s: %w", name, err)
	}
	if p.DeletionTimestamp != nil {
		return nil, nil
	}
	facts := &inject.Persona{CurrentRevision: p.Status.CurrentRevision, Snapshots: map[int64]string{}}
	for _, v := range p.Spec.Variants {
		facts.Variants = append(facts.Variants, v.Name)
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := i.ConfigMaps.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{delivery.PersonaIndex: name}); err != nil {
		// Without the snapshots the current revision is not known to be
		// there: the live ConfigMap.
		facts.CurrentRevision = 0
		return facts, fmt.Errorf("list the snapshots of persona %s: %w", name, err)
	}
	for _, m := range list.Items {
		owner := metav1.GetControllerOfNoCopy(&m)
		if persona, n, ok := delivery.SnapshotOf(m.Name); ok && persona == name && owner != nil && owner.UID == p.UID && m.DeletionTimestamp == nil {
			facts.Snapshots[n] = m.Annotations[delivery.GuardrailsAnnotation]
		}
	}
	return facts, nil
}

// pruned reports whether revision, which a pod template names and which is
// not the current one, has lost its snapshot since the cache saw it: only
// such pods (an old ReplicaSet's, during a rollout) read the API server.
func (i *Injector) pruned(ctx context.Context, namespace, name string, p *inject.Persona, revision int64) bool {
	if i.Snapshots == nil || p == nil || revision == 0 || revision == p.CurrentRevision {
		return false
	}
	snapshot := &metav1.PartialObjectMetadata{}
	snapshot.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	err := i.Snapshots.Get(ctx, client.ObjectKey{Namespace: namespace, Name: delivery.SnapshotName(name, revision)}, snapshot)
	return apierrors.IsNotFound(err) || err == nil && snapshot.DeletionTimestamp != nil
}
