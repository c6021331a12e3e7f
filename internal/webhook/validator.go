// Package webhook serves the validating admission webhook of personas.md#validating-before-apply for
// Personas, PromptLayers, ClusterPromptLayers and the PromptPlatform.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	personaadmission "github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/serving"
)

// Paths the webhook is served at, as config/webhook registers them.
const (
	PersonaPath     = "/validate-prompts-persona-operator-dev-v1alpha1-persona"
	PromptLayerPath = "/validate-prompts-persona-operator-dev-v1alpha1-promptlayer"
	// ClusterPromptLayerPath serves a cluster-scoped kind: config/webhook
	// scopes its rule to Cluster, which the marker cannot say.
	ClusterPromptLayerPath = "/validate-prompts-persona-operator-dev-v1alpha1-clusterpromptlayer"
	// PromptPlatformPath serves a cluster-scoped kind too.
	PromptPlatformPath = "/validate-prompts-persona-operator-dev-v1alpha1-promptplatform"
)

// +kubebuilder:webhook:path=/validate-prompts-persona-operator-dev-v1alpha1-persona,mutating=false,failurePolicy=fail,sideEffects=None,groups=prompts.persona-operator.dev,resources=personas,verbs=create;update,versions=v1alpha1,name=vpersona.persona-operator.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-prompts-persona-operator-dev-v1alpha1-promptlayer,mutating=false,failurePolicy=fail,sideEffects=None,groups=prompts.persona-operator.dev,resources=promptlayers,verbs=create;update,versions=v1alpha1,name=vpromptlayer.persona-operator.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-prompts-persona-operator-dev-v1alpha1-clusterpromptlayer,mutating=false,failurePolicy=fail,sideEffects=None,groups=prompts.persona-operator.dev,resources=clusterpromptlayers,verbs=create;update,versions=v1alpha1,name=vclusterpromptlayer.persona-operator.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-prompts-persona-operator-dev-v1alpha1-promptplatform,mutating=false,failurePolicy=fail,sideEffects=None,groups=prompts.persona-operator.dev,resources=promptplatforms,verbs=create;update,versions=v1alpha1,name=vpromptplatform.persona-operator.dev,admissionReviewVersions=v1

// Validator validates the raw object of an admission request, so that keys
// the typed API would drop are seen and refused.
type Validator struct {
	// Objects looks up referenced Personas and PromptLayers for warnings,
	// from the manager's cache; nil skips them.
	Objects client.Reader
	// TemplateSources looks up the metadata of templateFrom ConfigMaps
	// for warnings, from the cache of the template sources; nil skips them.
	TemplateSources client.Reader
}

// Register serves the webhook for every kind on the manager's webhook
// server. Anyone who reaches the port may send a review, naming any
// namespace, so the warnings read caches only, never the API server:
// Personas and PromptLayers from the manager's, ConfigMaps from
// templateSources, the controllers' cache of the template sources' metadata.
// Until a cache has synced its lookups find nothing and warn of nothing
// (syncedReader).
func Register(mgr ctrl.Manager, templateSources syncable) error {
	objects, sources := newSyncedReader(mgr.GetCache()), newSyncedReader(templateSources)
	for _, r := range []*syncedReader{objects, sources} {
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("wait for the caches the warnings read: %w", err)
		}
	}
	v := &Validator{Objects: objects, TemplateSources: sources}
	// One bound for every path: they share the heap.
	limit := newInflight(render.Default().Limits())
	server := mgr.GetWebhookServer()
	for _, path := range []string{PersonaPath, PromptLayerPath, ClusterPromptLayerPath, PromptPlatformPath} {
		server.Register(path, limit.wrap(&webhook.Admission{Handler: v}))
	}
	return nil
}

// Handle implements admission.Handler.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the %s object %s", req.Kind.Kind, personaadmission.DecodeErrorDetail(err)))
	}
	if token := controlPlaneToken(req, obj); token != "" {
		ip, learned, ok := serving.Prove(ctx, token)
		if !ok {
			// Refused, so that the manager that sent it, if any, checks again.
			return admission.Denied("a control plane check that proves nothing: its token is not one of this webhook's serving key from the last minute, or was used before")
		}
		if learned {
			log.FromContext(ctx).WithName("control-plane").Info("an API server's check proved the address it calls the webhooks from", "address", ip)
		}
		return admission.Allowed("a control plane check")
	}
	if errs := personaadmission.Validate(obj); len(errs) > 0 {
		return refusal(v1alpha1.GroupVersion.WithKind(req.Kind.Kind).GroupKind(), req.Name, errs)
	}
	resp := admission.Allowed("")
	for _, w := range personaadmission.Warnings(obj) {
		resp.Warnings = append(resp.Warnings, w.String())
	}
	resp.Warnings = append(resp.Warnings, v.warnings(ctx, req)...)
	return resp
}

// warnings reports references that do not exist yet: GitOps may apply them
// in any order, so they are not refused; the controller reports them. The
// API server always names the user; a review without one is not its, and
// gets no warnings. That filters malformed reviews only: anyone who reaches
// the port can name a user. What bounds a forged review is that warnings
// read the manager's caches, never the API server.
func (v *Validator) warnings(ctx context.Context, req admission.Request) []string {
	if req.UserInfo.Username == "" {
		return nil
	}
	var out []string
	missing := func(path *field.Path, from client.Reader, obj client.Object, kind, name string) {
		if from == nil {
			return
		}
		err := from.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			out = append(out, fmt.Sprintf("%s: %s", path, resolve.Reference{Kind: kind, Name: name}.Pending()))
		}
	}
	switch req.Kind.Kind {
	case "Persona":
		var p v1alpha1.Persona
		if json.Unmarshal(req.Object.Raw, &p) != nil {
			return nil
		}
		for i, parent := range p.Spec.Inherit {
			missing(field.NewPath("spec", "inherit").Index(i), v.Objects, &v1alpha1.Persona{}, "Persona", string(parent))
		}
		for i, l := range p.Spec.Layers {
			missing(field.NewPath("spec", "layers").Index(i).Child("name"), v.Objects, &v1alpha1.PromptLayer{}, "PromptLayer", l.Name)
		}
		out = append(out, v.forbiddenReplace(ctx, &p)...)
	case "PromptLayer":
		var l v1alpha1.PromptLayer
		if json.Unmarshal(req.Object.Raw, &l) != nil || l.Spec.TemplateFrom == nil {
			return nil
		}
		path := field.NewPath("spec", "templateFrom", "configMapKeyRef", "name")
		source := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
		missing(path, v.TemplateSources, source, "ConfigMap", l.Spec.TemplateFrom.ConfigMapKeyRef.Name)
		// The cache holds unlabelled ConfigMaps too when they are read
		// (--template-source-label=warn).
		if source.UID != "" && !resolve.IsTemplateSource(source.Labels) {
			ref := resolve.Reference{Kind: "ConfigMap", Name: source.Name, Unlabelled: true}
			out = append(out, fmt.Sprintf("%s: %s", path, ref.Problem()))
		}
	}
	return out
}

// forbiddenReplace warns of each harnessPrompt: replace that p sets itself
// while the PromptPlatform forbids it: the Persona is admitted (the
// PromptPlatform may change in the same sync) and fails to render with
// HarnessPromptForbidden until one of them changes. What p inherits, the
// controller reports.
func (v *Validator) forbiddenReplace(ctx context.Context, p *v1alpha1.Persona) []string {
	var fields []*field.Path
	if hp := p.Spec.HarnessPrompt; hp != nil && *hp == v1alpha1.HarnessPromptReplace {
		fields = append(fields, field.NewPath("spec", "harnessPrompt"))
	}
	for i, variant := range p.Spec.Variants {
		if variant.HarnessPrompt == v1alpha1.HarnessPromptReplace {
			fields = append(fields, field.NewPath("spec", "variants").Index(i).Child("harnessPrompt"))
		}
	}
	if len(fields) == 0 || v.Objects == nil {
		return nil
	}
	var pp v1alpha1.PromptPlatform
	if err := v.Objects.Get(ctx, client.ObjectKey{Name: v1alpha1.PromptPlatformName}, &pp); err != nil || pp.Spec.ReplaceAllowed() {
		return nil
	}
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = fmt.Sprintf("%s: %s %s forbids replace (its spec.harnessPrompt.allowReplace is false): the Persona will not render (%s) until one of them changes",
			f, v1alpha1.PromptPlatformKind, v1alpha1.PromptPlatformName, v1alpha1.HarnessPromptForbiddenReason)
	}
	return out
}

// controlPlaneToken is the token of a control plane check (a dry-run create
// of a Persona, ControlPlaneChecks) that req is, or empty.
func controlPlaneToken(req admission.Request, obj map[string]any) string {
	if req.Kind.Kind != "Persona" || req.Operation != admissionv1.Create || req.DryRun == nil || !*req.DryRun {
		return ""
	}
	metadata, _ := obj["metadata"].(map[string]any)
	annotations, _ := metadata["annotations"].(map[string]any)
	token, _ := annotations[ControlPlaneCheckAnnotation].(string)
	return token
}
