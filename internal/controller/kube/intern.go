package kube

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// The manager's caches hold thousands of objects that repeat the same
// strings: their namespace, label keys and values, annotation keys, owner
// kinds, and a Persona's section, origin and dependency names. Decoding
// gives each object its own copies; the cache transforms make them share
// one. Strings that differ from object to object (names, hashes, messages)
// are left alone: sharing them would only add a table entry.

// Intern returns the canonical copy of s. A canonical copy lasts until a
// collection finds no handle of it (package unique), and Intern keeps none:
// the objects decoded between two collections share one copy, so a cache
// holds a copy of each string per collection in which some of its objects
// were decoded, which for the few strings it is given is little.
func Intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// InternMeta drops o's managedFields, which the manager never reads, and
// makes its repeated strings shared: the namespace, labels, annotation keys,
// the guardrails' identity and the owners' API versions and kinds.
func InternMeta(o metav1.Object) {
	if o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	o.SetNamespace(Intern(o.GetNamespace()))
	if in := o.GetLabels(); len(in) > 0 {
		out := make(map[string]string, len(in))
		for k, v := range in {
			out[Intern(k)] = Intern(v)
		}
		o.SetLabels(out)
	}
	if in := o.GetAnnotations(); len(in) > 0 {
		out := make(map[string]string, len(in))
		for k, v := range in {
			if k == delivery.GuardrailsAnnotation {
				v = Intern(v) // one set of guardrails serves every ConfigMap of a cluster
			}
			out[Intern(k)] = v
		}
		o.SetAnnotations(out)
	}
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = Intern(refs[i].APIVersion), Intern(refs[i].Kind)
	}
	o.SetOwnerReferences(refs)
}

// internPersona makes what Personas repeat shared: the names their specs
// refer to, their statuses' lists of sections and of dependencies
// (shared_lists.go), their condition names and their revisions' causes.
func internPersona(p *v1alpha1.Persona) {
	for i := range p.Spec.Inherit {
		p.Spec.Inherit[i] = v1alpha1.PersonaName(Intern(string(p.Spec.Inherit[i])))
	}
	for i := range p.Spec.Layers {
		p.Spec.Layers[i].Name = Intern(p.Spec.Layers[i].Name)
	}
	st := &p.Status
	st.Sections, st.Dependencies = ShareSections(st.Sections), ShareDependencies(st.Dependencies)
	// Decoding grows a list by doubling: a history of 9 revisions would
	// keep room for 16 as long as the cache holds the Persona.
	st.Conditions, st.History = fitted(st.Conditions), fitted(st.History)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status, c.Reason = Intern(c.Type), metav1.ConditionStatus(Intern(string(c.Status))), Intern(c.Reason)
	}
	// The revisions of a fan-out share their cause; the current one's hash
	// is the status's own.
	for i := range st.History {
		h := &st.History[i]
		h.Cause.Kind, h.Cause.Namespace, h.Cause.Name = Intern(h.Cause.Kind), Intern(h.Cause.Namespace), Intern(h.Cause.Name)
		h.Cause.ResourceVersion = Intern(h.Cause.ResourceVersion)
		if h.ContentHash == st.ContentHash {
			h.ContentHash = st.ContentHash
		}
	}
}

// fitted is s in an array of its own length.
func fitted[S ~[]E, E any](s S) S {
	if cap(s) == len(s) {
		return s
	}
	return append(make(S, 0, len(s)), s...)
}

// InternObjects is the cache's default transform: see InternMeta and
// internPersona.
func InternObjects(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		InternMeta(o)
	}
	if p, ok := obj.(*v1alpha1.Persona); ok {
		internPersona(p)
	}
	return obj, nil
}
