package controller

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// The manager's caches hold thousands of objects that repeat the same
// strings: their namespace, label keys and values, annotation keys, owner
// kinds, and a Persona's section, origin and dependency names. Decoding
// gives each object its own copies; the cache transforms make them share
// one. Strings that differ from object to object (names, hashes, messages)
// are left alone: sharing them would only add a table entry.

// intern returns the canonical copy of s.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internMeta drops o's managedFields, which the manager never reads, and
// makes its repeated strings shared: the namespace, labels, annotation keys
// and the owners' API versions and kinds.
func internMeta(o metav1.Object) {
	if o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	o.SetNamespace(intern(o.GetNamespace()))
	if in := o.GetLabels(); len(in) > 0 {
		out := make(map[string]string, len(in))
		for k, v := range in {
			out[intern(k)] = intern(v)
		}
		o.SetLabels(out)
	}
	if in := o.GetAnnotations(); len(in) > 0 {
		out := make(map[string]string, len(in))
		for k, v := range in {
			out[intern(k)] = v
		}
		o.SetAnnotations(out)
	}
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = intern(refs[i].APIVersion), intern(refs[i].Kind)
	}
	o.SetOwnerReferences(refs)
}

// internPersona makes the strings that Personas repeat shared: the names
// their specs refer to, and their statuses' section, origin, dependency and
// condition names.
func internPersona(p *v1alpha1.Persona) {
	for i := range p.Spec.Inherit {
		p.Spec.Inherit[i] = v1alpha1.PersonaName(intern(string(p.Spec.Inherit[i])))
	}
	for i := range p.Spec.Layers {
		p.Spec.Layers[i].Name = intern(p.Spec.Layers[i].Name)
	}
	st := &p.Status
	for i := range st.Sections {
		st.Sections[i].Name, st.Sections[i].Origin = intern(st.Sections[i].Name), intern(st.Sections[i].Origin)
	}
	for i := range st.Dependencies {
		st.Dependencies[i].Kind, st.Dependencies[i].Name = intern(st.Dependencies[i].Kind), intern(st.Dependencies[i].Name)
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status, c.Reason = intern(c.Type), metav1.ConditionStatus(intern(string(c.Status))), intern(c.Reason)
	}
}

// internObjects is the cache's default transform: see internMeta and
// internPersona.
func internObjects(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		internMeta(o)
	}
	if p, ok := obj.(*v1alpha1.Persona); ok {
		internPersona(p)
	}
	return obj, nil
}
