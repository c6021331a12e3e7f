package cli

import (
	"strings"

	"github.com/persona-operator/persona-operator/internal/manifest"
)

// ValidateResult is what kubectl persona validate -o json prints: one
// document, whether or not the manifests are valid.
type ValidateResult struct {
	// Valid is true when there is no problem.
	Valid bool `json:"valid"`
	// Counts are what was read and found.
	Counts Counts `json:"counts"`
	// Problems are ordered by file, document and item; never null.
	Problems []Problem `json:"problems"`
	// Warnings are what admission admits with a warning (a near miss of a
	// built-in layer source, template braces in a persona's prompt), in
	// the same form and order; never null. They do not make Valid false.
	Warnings []Problem `json:"warnings"`
}

// Counts are the documents and objects a validate read, and the problems
// it found. Objects count every Persona, PromptLayer, ClusterPromptLayer,
// PromptPlatform, ConfigMap and Namespace read, duplicates included.
type Counts struct {
	Documents           int `json:"documents"`
	Personas            int `json:"personas"`
	PromptLayers        int `json:"promptLayers"`
	ClusterPromptLayers int `json:"clusterPromptLayers"`
	PromptPlatforms     int `json:"promptPlatforms"`
	ConfigMaps          int `json:"configMaps"`
	Namespaces          int `json:"namespaces"`
	Problems            int `json:"problems"`
}

// Problem is one problem, the JSON form of a FILE:DOC Kind/name: field:
// message line.
type Problem struct {
	// File is the path as given or found in a directory, <stdin>, or the
	// directory of a kustomization read with -k.
	File string `json:"file"`
	// Document is the 1-based index of the YAML document in the file (in
	// the build output, with -k).
	Document int `json:"document"`
	// Item is the 0-based index in the items of a List document; absent
	// when the object is the document itself.
	Item *int `json:"item,omitempty"`
	// Kind and Name are the object's, when the problem belongs to one; Name
	// is empty when the object has none.
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
	// Field is the field path the problem is about, when there is one.
	Field string `json:"field,omitempty"`
	// Reason is the Ready reason the operator reports the problem with
	// (ReferenceNotFound, InheritanceCycle, InheritanceTooDeep,
	// HarnessPromptForbidden, RenderFailed, TooLarge or, for a PromptLayer,
	// TemplateInvalid); absent
	// for a problem the admission webhook refuses.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

// validateResult is the JSON form of ps and counts.
func validateResult(ps, warnings problems, counts Counts) ValidateResult {
	r := ValidateResult{Valid: len(ps) == 0, Counts: counts, Problems: []Problem{}, Warnings: []Problem{}}
	for _, p := range ps.sorted() {
		r.Problems = append(r.Problems, jsonProblem(p))
	}
	for _, w := range warnings.sorted() {
		r.Warnings = append(r.Warnings, jsonProblem(w))
	}
	return r
}

func jsonProblem(p manifest.Problem) Problem {
	out := Problem{File: p.Origin.File, Document: p.Origin.Doc, Field: p.Field, Reason: p.Reason, Message: p.Message}
	if p.Origin.Item > 0 {
		item := p.Origin.Item - 1
		out.Item = &item
	}
	if p.Object != "" {
		// Object is Kind/name, with (unnamed) for an object without a name.
		out.Kind, out.Name, _ = strings.Cut(p.Object, "/")
		if out.Name == "(unnamed)" {
			out.Name = ""
		}
	}
	return out
}
