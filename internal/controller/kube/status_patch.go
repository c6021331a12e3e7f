package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	if patch == nil && patchErr == nil {
		return nil
	}
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
// object, which is all the status subresource takes. It is nil when the two
// write the same JSON (an empty list and none, say).
func statusMergePatch(before, after any) ([]byte, error) {
	from, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	to, err := json.Marshal(after)
	if err != nil {
		return nil, err
	}
	patch, err := objectMergePatch(from, to)
	if err != nil || string(patch) == "{}" {
		return nil, err
	}
	return json.Marshal(map[string]json.RawMessage{"status": patch})
}

// objectMergePatch is the JSON merge patch (RFC 7386) that turns the
// object from into to, both as encoding/json writes them, so that a value
// unchanged is the same bytes: a member whose bytes changed is set (an
// object's members compared in turn, an array whole), a member gone is set
// to null. It gives what jsonpatch.CreateMergePatch gives without decoding
// every value into maps and slices of interfaces, which was a sixth of what
// a fan-out's reconciles allocated.
func objectMergePatch(from, to []byte) (json.RawMessage, error) {
	var before, after map[string]json.RawMessage
	if err := json.Unmarshal(from, &before); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(to, &after); err != nil {
		return nil, err
	}
	patch := map[string]json.RawMessage{}
	for key := range before {
		if _, ok := after[key]; !ok {
			patch[key] = jsonNull
		}
	}
	for key, is := range after {
		was, ok := before[key]
		switch {
		case ok && bytes.Equal(was, is):
		case ok && isObject(was) && isObject(is):
			inner, err := objectMergePatch(was, is)
			if err != nil {
				return nil, err
			}
			patch[key] = inner
		default:
			patch[key] = is
		}
	}
	return json.Marshal(patch)
}

var jsonNull = json.RawMessage("null")

func isObject(v json.RawMessage) bool { return len(v) > 0 && v[0] == '{' }
