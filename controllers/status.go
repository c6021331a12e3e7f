package controllers

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchStatus patches obj's status from original, once at the end of a
// reconcile, and only when the status changed: a reconcile that changes
// nothing writes nothing. A failure joins the reconcile's error.
func patchStatus(ctx context.Context, c client.Client, obj, original client.Object, before, after any, err *error) {
	if equality.Semantic.DeepEqual(before, after) {
		return
	}
	if patchErr := c.Status().Patch(ctx, obj, client.MergeFrom(original)); patchErr != nil {
		*err = errors.Join(*err, fmt.Errorf("patch status: %w", patchErr))
	}
}
