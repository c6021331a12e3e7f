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
)

// patchStatus patches obj's status from before to after, once at the end of
// a reconcile, and only when it changed: a reconcile that changes nothing
// writes nothing. A failure joins the reconcile's error. obj is not updated:
// nothing reads it after the patch, so the API server answers with its
// metadata only rather than the whole object.
func patchStatus(ctx context.Context, c client.Client, obj client.Object, before, after any, err *error) {
	if equality.Semantic.DeepEqual(before, after) {
		return
	}
	patch, patchErr := statusMergePatch(before, after)
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
