package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/status"
)

// problems collects the problems of a manifest set, each tied to a
// document, and prints them as FILE:DOC Kind/name: field: message.
type problems []manifest.Problem

func (ps *problems) add(o *manifest.Object, fld, msg string) {
	*ps = append(*ps, manifest.Problem{Origin: o.Origin, Object: o.Ref(), Field: fld, Message: msg})
}

// failed adds a problem the operator reports as a failure of the object's
// Ready condition with reason (personas.md#conditions).
func (ps *problems) failed(o *manifest.Object, fld, reason, msg string) {
	*ps = append(*ps, manifest.Problem{Origin: o.Origin, Object: o.Ref(), Field: fld, Reason: reason, Message: msg})
}

// sorted orders the problems by file, document and item; the problems of
// one document keep the order they were found in.
func (ps problems) sorted() problems {
	sorted := slices.Clone(ps)
	slices.SortStableFunc(sorted, func(a, b manifest.Problem) int { return a.Origin.Compare(b.Origin) })
	return sorted
}

// write prints the problems in order, one a line.
func (ps problems) write(w io.Writer) {
	for _, p := range ps.sorted() {
		fmt.Fprintln(w, oneLine(p.String()))
	}
}

// oneLine keeps a problem on one line: template errors may quote text with
// newlines.
func oneLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// admit runs the admission checks of personas.md#validating-before-apply on every Persona and
// PromptLayer of the set. It returns the objects without problems.
func admit(set *manifest.Set, ps *problems) map[*manifest.Object]bool {
	ok := map[*manifest.Object]bool{}
	for _, o := range set.Objects() {
		if o.Kind == v1alpha1.ConfigMapKind || o.Kind == v1alpha1.NamespaceKind {
			// Not ours to admit, but read: a value of the wrong type is
			// reported here, where the object is.
			if err := coreObjectProblems(o); err != nil {
				ps.addDecodeError(o, err)
				continue
			}
			ok[o] = true
			continue
		}
		errs := admission.Validate(o.Raw)
		for _, e := range errs {
			ps.add(o, e.Field, e.ErrorBody())
		}
		if len(errs) == 0 {
			ok[o] = true
		}
	}
	return ok
}

// checkPersona resolves and renders a Persona the way the operator does:
// every ReferenceNotFound, InheritanceCycle, InheritanceTooDeep,
// HarnessPromptForbidden, RenderFailed and TooLarge problem is reported with
// the field it is closest to. It returns the
// render, nil when there was a problem.
func checkPersona(ctx context.Context, set *manifest.Set, o *manifest.Object, ps *problems) *render.Output {
	var p v1alpha1.Persona
	if err := o.Decode(&p); err != nil {
		ps.addDecodeError(o, err)
		return nil
	}
	res, err := resolve.Resolve(ctx, set, &p)
	if err != nil {
		reportResolveError(set, &p, o, err, ps)
		return nil
	}
	out, err := render.Default().ConfigMap(res.Bundle)
	if err != nil {
		ps.failed(o, renderErrorField(&p, err), status.RenderReason(err), err.Error())
		return nil
	}
	return out
}

// reportResolveError reports each missing reference at the field that
// names it, and an inheritance problem at spec.inherit.
func reportResolveError(set *manifest.Set, p *v1alpha1.Persona, o *manifest.Object, err error, ps *problems) {
	reason, ok := status.ResolveReason(err)
	var nf *resolve.NotFoundError
	var forbidden *resolve.HarnessPromptForbiddenError
	var invalid *manifest.InvalidError
	switch {
	case errors.As(err, &invalid):
		ps.add(o, invalidReferenceField(p, invalid.Object), invalidReference(invalid.Object))
	case !ok:
		ps.add(o, "spec", err.Error())
	case errors.As(err, &nf):
		for _, ref := range nf.Missing {
			ps.failed(o, referenceField(p, ref), reason, missingProblem(set, o.Namespace, ref))
		}
	case errors.As(err, &forbidden):
		for _, use := range forbidden.Uses {
			ps.failed(o, use.Field, reason, use.Problem())
		}
	default:
		ps.failed(o, inheritPath.String(), reason, err.Error())
	}
}

var (
	specPath       = field.NewPath("spec")
	inheritPath    = specPath.Child("inherit")
	layersPath     = specPath.Child("layers")
	platformPath   = specPath.Child("systemPrompt", "platform")
	extensionsPath = specPath.Child("systemPrompt", "extensions")
	variantsPath   = specPath.Child("variants")
)

// referenceField is the field of p closest to a missing reference: the
// entry of p's own inherit or layers that names it, the list when a parent
// names it, the template that includes it.
func referenceField(p *v1alpha1.Persona, ref resolve.Reference) string {
	self := ref.By == resolve.Referrer{Kind: resolve.ByPersona, Name: p.Name}
	switch {
	case ref.Kind == v1alpha1.PersonaKind:
		if i := slices.Index(p.Spec.Inherit, v1alpha1.PersonaName(ref.Name)); self && i >= 0 {
			return inheritPath.Index(i).String()
		}
		return inheritPath.String()
	case ref.By.Kind == resolve.ByPersona:
		// A PromptLayer listed in layers.
		return layerField(p, ref.Name, self)
	case ref.By.Kind == resolve.ByLayer:
		// A templateFrom ConfigMap of a layer, or a layer a layer includes.
		return layerField(p, ref.By.Name, true)
	case ref.By.Kind == resolve.ByExtension:
		return extensionField(p, ref.By.Name)
	case ref.By.Kind == resolve.ByPlatform:
		return platformField(p, ref.By.Name)
	}
	return specPath.String()
}

func layerField(p *v1alpha1.Persona, name string, precise bool) string {
	if precise {
		for i, l := range p.Spec.Layers {
			if l.Name == name {
				return layersPath.Index(i).String()
			}
		}
	}
	return layersPath.String()
}

func extensionField(p *v1alpha1.Persona, id string) string {
	if sp := p.Spec.SystemPrompt; sp != nil {
		for i, e := range sp.Extensions {
			if e.ID == id {
				return extensionsPath.Index(i).Child("template").String()
			}
		}
	}
	return extensionsPath.String()
}

func platformField(p *v1alpha1.Persona, key string) string {
	if sp := p.Spec.SystemPrompt; sp != nil {
		if o, ok := sp.Platform[key]; ok && o.Replace != nil {
			return admission.KeyPath(platformPath, key).Child("replace").String()
		}
	}
	return platformPath.String()
}

// renderErrorField is the field of the section that does not render; spec
// for a failure of no one section.
func renderErrorField(p *v1alpha1.Persona, err error) string {
	var re *render.RenderError
	if !errors.As(err, &re) {
		return specPath.String()
	}
	kind, name, _ := strings.Cut(re.Section, ".")
	switch kind {
	case "platform":
		return platformField(p, name)
	case "extension":
		return extensionField(p, name)
	case "layer":
		return layerField(p, name, true)
	}
	if re.Variant != "" {
		for i, v := range p.Spec.Variants {
			if v.Name == re.Variant {
				return variantsPath.Index(i).String()
			}
		}
	}
	return specPath.String()
}

// checkLayer checks what the operator checks before a PromptLayer is Ready
// (status.CheckLayer), and reports a templateFrom problem at the field of
// the ConfigMap's name or key.
func checkLayer(set *manifest.Set, o *manifest.Object, ps *problems) {
	var l v1alpha1.PromptLayer
	if err := o.Decode(&l); err != nil {
		ps.addDecodeError(o, err)
		return
	}
	problem, err := status.CheckLayer(context.Background(), set, &l)
	fromPath := specPath.Child("templateFrom", "configMapKeyRef")
	var invalid *manifest.InvalidError
	switch {
	case errors.As(err, &invalid):
		ps.add(o, fromPath.Child("name").String(), invalidReference(invalid.Object))
	case err != nil:
		ps.add(o, fromPath.String(), err.Error())
	case problem == nil:
	case problem.Missing != nil && problem.Missing.Key != "":
		ps.failed(o, fromPath.Child("key").String(), problem.Reason, missingProblem(set, o.Namespace, *problem.Missing))
	case problem.Missing != nil:
		ps.failed(o, fromPath.Child("name").String(), problem.Reason, missingProblem(set, o.Namespace, *problem.Missing))
	case l.Spec.Template == nil && l.Spec.TemplateFrom != nil:
		// Offline, the message says where the text came from.
		ref := l.Spec.TemplateFrom.ConfigMapKeyRef
		ps.failed(o, fromPath.String(), problem.Reason, fmt.Sprintf("the template in key %q of ConfigMap %q: %s", ref.Key, ref.Name, problem.Message))
	default:
		// An inline template that passed admission passes these checks too.
		ps.failed(o, specPath.Child("template").String(), problem.Reason, problem.Message)
	}
}
