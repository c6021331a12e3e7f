package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// patchStatus patches obj's status from before to after, once at the end of
// a reconcile, and only when it changed: a reconcile that changes nothing
// writes nothing. A failure joins the reconcile's error. obj is not updated:
// nothing reads it after the patch, so the API server answers with its
// metadata only rather than the whole object.
func patchStatus(ctx context.Context, c client.Client, obj client.Object, before, after any, err *error) {
	patchStatusFrom(ctx, c, obj, before, after, "", err)
}

// patchPersonaStatus patches a Persona's status as patchStatus does. Its
// conditions are shared: RolloutHalted is the restarts' (RestartFieldManager),
// and the status builders set their own conditions and leave the others.
// But a merge patch replaces a list whole, so one computed from a cached
// copy that has not seen the restarts' latest write would drop or revert
// their condition. So when the conditions change, the patch carries the
// resourceVersion it was computed from: a stale copy gets a Conflict, and
// the reconcile runs again on a fresh one.
func patchPersonaStatus(ctx context.Context, c client.Client, p *v1alpha1.Persona, before *v1alpha1.PersonaStatus, err *error) {
	var resourceVersion string
	if !equality.Semantic.DeepEqual(before.Conditions, p.Status.Conditions) {
		resourceVersion = p.ResourceVersion
	}
	patchStatusFrom(ctx, c, p, before, &p.Status, resourceVersion, err)
}

// patchStatusFrom is patchStatus, with the patch conditional on obj's
// resourceVersion when one is given.
func patchStatusFrom(ctx context.Context, c client.Client, obj client.Object, before, after any, resourceVersion string, err *error) {
	if equality.Semantic.DeepEqual(before, after) {
		return
	}
	patch, patchErr := statusMergePatch(before, after, resourceVersion)
	var gvk schema.GroupVersionKind
	if patchErr == nil {
		gvk, patchErr = apiutil.GVKForObject(obj, c.Scheme())
	}
	if patchErr == nil {
		target := &metav1.PartialObjectMetadata{}
		target.SetGroupVersionKind(gvk)
		target.SetNamespace(obj.GetNamespace())
		target.SetName(obj.GetName())
		patchErr = c.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
	}
	if patchErr != nil {
		*err = errors.Join(*err, fmt.Errorf("patch status: %w", patchErr))
	}
}

// statusMergePatch is the JSON merge patch from status before to after: the
// one client.MergeFrom computes, from the status alone rather than the whole
// object, which is all the status subresource takes. With a resourceVersion,
// it is the one client.MergeFromWithOptimisticLock computes: the API server
// refuses it with a Conflict once the object has changed since.
func statusMergePatch(before, after any, resourceVersion string) ([]byte, error) {
	from, err := json.Marshal(map[string]any{"status": before})
	if err != nil {
		return nil, err
	}
	to := map[string]any{"status": after}
	if resourceVersion != "" {
		to["metadata"] = map[string]any{"resourceVersion": resourceVersion}
	}
	toJSON, err := json.Marshal(to)
	if err != nil {
		return nil, err
	}
	return jsonpatch.CreateMergePatch(from, toJSON)
}
