package persona

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// rereads bounds how often resolve reads again while references keep
// arriving during one reconcile.
const rereads = 4

// resolve resolves p and records the references it found missing, then
// reads them again: an object that arrived before the record is seen by
// that read, and one that arrives after finds p waiting for it (personas.md#conditions,
// order never matters). It returns what the resolve that counts read.
func (r *reconciler) resolve(ctx context.Context, p *v1alpha1.Persona) (*resolve.Result, inputs, []v1alpha1.RevisionInput, error) {
	res, in, read, err := r.resolveOnce(ctx, p)
	for range rereads {
		missing := missingReferences(err)
		r.waiting.set(client.ObjectKeyFromObject(p), awaitedObjects(p.Namespace, missing))
		if len(missing) == 0 {
			return res, in, read, err
		}
		again, againIn, againRead, againErr := r.resolveOnce(ctx, p)
		if slices.Equal(missingReferences(againErr), missing) {
			return res, in, read, err
		}
		res, in, read, err = again, againIn, againRead, againErr
	}
	return res, in, read, fmt.Errorf("references of persona %s keep arriving while it resolves; trying again", p.Name)
}

// resolveOnce also returns the inputs revision.json names.
func (r *reconciler) resolveOnce(ctx context.Context, p *v1alpha1.Persona) (*resolve.Result, inputs, []v1alpha1.RevisionInput, error) {
	reads := newReadLog(p)
	res, err := resolve.Resolve(ctx, kube.Lookup{Cached: r.Client, Sources: r.configMaps, Reads: reads}, p)
	selected := make([]types.UID, 0, len(res.Guardrails))
	for _, g := range res.Guardrails {
		selected = append(selected, g.UID)
	}
	return res, reads.sum(), reads.revisionInputs(selected), err
}

func missingReferences(err error) []resolve.Reference {
	var notFound *resolve.NotFoundError
	if errors.As(err, &notFound) {
		return notFound.Missing
	}
	return nil
}

func awaitedObjects(namespace string, missing []resolve.Reference) []objectRef {
	refs := make([]objectRef, 0, len(missing))
	for _, m := range missing {
		refs = append(refs, objectRef{Kind: m.Kind, Namespace: namespace, Name: m.Name})
	}
	slices.SortFunc(refs, func(a, b objectRef) int { return cmp.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name) })
	return slices.Compact(refs)
}
