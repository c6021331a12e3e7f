package kube

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
)

// PatchStatus patches obj's status from before to after, once at the end of
// a reconcile, and only when it changed: a reconcile that changes nothing
// writes nothing. A failure joins the reconcile's error. obj is not updated:
// the API server answers with the object's metadata only rather than the
// whole object, which PatchStatus returns: what it is as the patch left
// it, newer than the reconcile's copy (nil when nothing was patched).
func PatchStatus(ctx context.Context, c client.Client, obj client.Object, before, after any, err *error) *metav1.PartialObjectMetadata {
	if equality.Semantic.DeepEqual(before, after) {
		return nil
	}
	patch, patchErr := statusMergePatch(before, after)
	var gvk schema.GroupVersionKind
	if patchErr == nil {
		gvk, patchErr = apiutil.GVKForObject(obj, c.Scheme())
	}
	target := &metav1.PartialObjectMetadata{}
	if patchErr == nil {
		target.SetGroupVersionKind(gvk)
		target.SetNamespace(obj.GetNamespace())
		target.SetName(obj.GetName())
		patchErr = c.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
	}
	if patchErr != nil {
		*err = errors.Join(*err, fmt.Errorf("patch status: %w", patchErr))
		return nil
	}
	return target
}

// statusMergePatch is the JSON merge patch from status before to after: the
// one client.MergeFrom computes, from the status alone rather than the whole
// object, which is all the status subresource takes.
func statusMergePatch(before, after any) ([]byte, error) {
	from, err := json.Marshal(map[string]any{"status": before})
	if err != nil {
		return nil, err
	}
	to, err := json.Marshal(map[string]any{"status": after})
	if err != nil {
		return nil, err
	}
	return jsonpatch.CreateMergePatch(from, to)
}
