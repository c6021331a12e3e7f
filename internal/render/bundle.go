package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	kjson "sigs.k8s.io/json"
)

// The versions of the bundle.json format. This package reads both and
// writes the lowest that holds the bundle: version 2 only when a guardrail
// is final. A reader that knows version 1 only refuses version 2, so it
// never places a final guardrail as it would a last one, before the caller
// prompts (it would take an unknown position for last).
const (
	BundleVersion = 1
	// BundleVersionFinal is the version of a bundle that holds a guardrail
	// of position final.
	BundleVersionFinal = 2
)

// formatVersion is the version bundle.json of b is written with.
func (b *Bundle) formatVersion() int {
	for _, c := range b.ClusterLayers {
		if c.Position == PositionFinal {
			return BundleVersionFinal
		}
	}
	return BundleVersion
}

// Bundle is the resolved, unrendered input of one persona's render: the
// platform sections after overrides, the extensions, the sorted layers, the
// included fragments, the persona's fields, vars and context. bundle.json is a
// Bundle serialized, so a per-turn render from it gives exactly what the
// operator renders for the same context.
type Bundle struct {
	Version    int               `json:"version"`
	Persona    PersonaFields     `json:"persona"`
	Vars       map[string]string `json:"vars,omitempty"`
	Context    Context           `json:"context"`
	Sections   []Section         `json:"sections"`
	Extensions []Extension       `json:"extensions,omitempty"`
	Layers     []Layer           `json:"layers,omitempty"`
	// Includes maps a PromptLayer name to its template, for every layer a
	// template of this bundle includes, directly or through another include.
	Includes map[string]string `json:"includes,omitempty"`
	// ClusterLayers are the ClusterPromptLayers selected for the persona,
	// in name order.
	ClusterLayers []ClusterLayer `json:"clusterLayers,omitempty"`
	Variants      []Variant      `json:"variants,omitempty"`
	// Requires names the features of this bundle that a reader must honour
	// to render it as the operator does. A reader ignores the fields it does
	// not know, so a newer bundle still renders in an older agent image,
	// unless the bundle requires a feature the reader does not know: then it
	// refuses the bundle and names the feature, so nothing that changes the
	// prompt (a guardrail, a position) is ever dropped silently.
	Requires []string `json:"requires,omitempty"`
}

// bundleFeatures are the features this build honours when a bundle requires
// them. Every feature that a reader unaware of it would drop or misplace is
// written into Requires and added here; the guardrails and their positions
// first, last and final predate the rule (a reader refuses an unknown
// position or version), so none is listed yet. harnessPrompt is no such
// feature: it changes how a launcher gives the harness the prompt, never the
// prompt a reader renders, so an older reader renders its bundle right.
var bundleFeatures = map[string]bool{}

// MarshalBundle serializes b as bundle.json: compact, HTML characters left
// as they are, one trailing newline. The same bundle gives the same bytes.
// Compact, because every Persona's ConfigMap carries one and a fan-out
// writes thousands: indenting cost the manager a tenth of its CPU and the
// ConfigMap a fifth of the bundle's bytes (jq shows it indented).
func MarshalBundle(b *Bundle) ([]byte, error) {
	text, err := bundleText(b)
	return []byte(text), err
}

// bundleText is MarshalBundle as a string, encoded in a pooled buffer: the
// string is its one allocation, since a fan-out renders thousands and every
// byte allocated is the garbage collector's work.
func bundleText(b *Bundle) (string, error) {
	out := *b
	out.Version = b.formatVersion()
	if out.Sections == nil {
		out.Sections = []Section{} // every section removed: [], not null
	}
	buf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return "", fmt.Errorf("encode bundle: %w", err)
	}
	return buf.String(), nil
}

// buffers are the encoding buffers of bundleText and ContentHash.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer keeps the pool from holding the buffer of one outsized
// bundle for good.
const maxPooledBuffer = 1 << 20

func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledBuffer {
		return
	}
	buf.Reset()
	buffers.Put(buf)
}

// UnmarshalBundle reads bundle.json. Fields it does not know are ignored,
// as a newer operator may write them; a required feature it does not know,
// a repeated field, another version and an unknown guardrail position are
// errors, and so is a final guardrail in a version 1 bundle.
func UnmarshalBundle(raw []byte) (*Bundle, error) {
	var b Bundle
	strict, err := kjson.UnmarshalStrict(raw, &b, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("read bundle: %w", errors.Join(strict...))
	}
	for _, feature := range b.Requires {
		if !bundleFeatures[feature] {
			return nil, fmt.Errorf("read bundle: it requires %q, a feature this kubectl-persona does not know: "+
				"use the kubectl-persona of the operator's release or a newer one", feature)
		}
	}
	if b.Version != BundleVersion && b.Version != BundleVersionFinal {
		return nil, fmt.Errorf("read bundle: version %d is not supported (this build reads versions %d and %d)", b.Version, BundleVersion, BundleVersionFinal)
	}
	for _, c := range b.ClusterLayers {
		switch c.Position {
		case PositionFirst, PositionLast:
		case PositionFinal:
			if b.Version < BundleVersionFinal {
				return nil, fmt.Errorf("read bundle: guardrail %q is final, which a version %d bundle cannot hold", c.Name, b.Version)
			}
		default:
			return nil, fmt.Errorf("read bundle: guardrail %q has position %q, not one of %s, %s, %s", c.Name, c.Position, PositionFirst, PositionLast, PositionFinal)
		}
	}
	return &b, nil
}

// PersonaFields are the persona's resolved scalar fields.
type PersonaFields struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Prompt is the composed body of the inheritance chain (.Persona.Prompt).
	Prompt          string `json:"prompt,omitempty"`
	Model           string `json:"model,omitempty"`
	Harness         string `json:"harness,omitempty"`
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	Streaming       bool   `json:"streaming,omitempty"`
	// HarnessPrompt is keep or replace: how a launcher gives the harness
	// the prompt; empty when no persona of the chain sets it, which is keep.
	HarnessPrompt string `json:"harnessPrompt,omitempty"`
}

// PersonaMarkdown is the ConfigMap key persona.md of b: the composed body,
// which does not depend on a turn.
func (b *Bundle) PersonaMarkdown() string { return withNewline(b.Persona.Prompt) }

// Section is a platform section after overrides. Removed sections are absent.
type Section struct {
	Key      string `json:"key"`
	Origin   string `json:"origin"`
	Template string `json:"template"`
}

// Extension is one of the persona's own sections.
type Extension struct {
	ID       string `json:"id"`
	Origin   string `json:"origin"`
	Template string `json:"template"`
}

// ClusterLayer is a ClusterPromptLayer selected for the persona: a
// guardrail placed after every other step of composition has acted.
type ClusterLayer struct {
	Name string `json:"name"`
	// Position is PositionFirst, PositionLast or PositionFinal.
	Position string `json:"position"`
	Template string `json:"template,omitempty"`
}

// Positions of a ClusterLayer: before the text composed so far, after it,
// or after the caller prompts too.
const (
	PositionFirst = "first"
	PositionLast  = "last"
	PositionFinal = "final"
)

// Layer is a PromptLayer listed by the persona.
type Layer struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Mode   string `json:"mode"`
	// Template is the layer's template text, read from templateFrom when the
	// layer uses it; empty for a disable layer without one.
	Template string `json:"template,omitempty"`
}

// Variant is an extra render with some of the persona's fields overridden.
type Variant struct {
	Name            string `json:"name"`
	Harness         string `json:"harness,omitempty"`
	Model           string `json:"model,omitempty"`
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// HarnessPrompt is the variant's keep or replace; empty: the persona's.
	HarnessPrompt string `json:"harnessPrompt,omitempty"`
}

// Context holds values for the per-turn variables (personas.md#writing-a-persona-spec spec.context). A
// nil field is unset.
type Context struct {
	Workspace          *string         `json:"workspace,omitempty"`
	Slug               *string         `json:"slug,omitempty"`
	WorkspaceDir       *string         `json:"workspaceDir,omitempty"`
	Repos              []Repo          `json:"repos,omitempty"`
	GitHubGateway      *bool           `json:"gitHubGateway,omitempty"`
	HasResultSchema    *bool           `json:"hasResultSchema,omitempty"`
	FlightMessages     []FlightMessage `json:"flightMessages,omitempty"`
	Knowledge          *Knowledge      `json:"knowledge,omitempty"`
	ExpectedOutput     *string         `json:"expectedOutput,omitempty"`
	Tasks              []Task          `json:"tasks,omitempty"`
	UserSystemPrompt   *string         `json:"userSystemPrompt,omitempty"`
	AppendSystemPrompt *string         `json:"appendSystemPrompt,omitempty"`
}

// Turn is a per-turn context: the context keys plus the persona settings a
// turn may override. Every field it sets overrides the persona's.
type Turn struct {
	Context
	Harness         *string `json:"harness,omitempty"`
	Model           *string `json:"model,omitempty"`
	ReasoningEffort *string `json:"reasoningEffort,omitempty"`
	Streaming       *bool   `json:"streaming,omitempty"`
}

// Overlay sets every field of c that over sets.
func (c *Context) Overlay(over *Context) {
	if over == nil {
		return
	}
	setIf(&c.Workspace, over.Workspace)
	setIf(&c.Slug, over.Slug)
	setIf(&c.WorkspaceDir, over.WorkspaceDir)
	if over.Repos != nil {
		c.Repos = over.Repos
	}
	setIf(&c.GitHubGateway, over.GitHubGateway)
	setIf(&c.HasResultSchema, over.HasResultSchema)
	if over.FlightMessages != nil {
		c.FlightMessages = over.FlightMessages
	}
	setIf(&c.Knowledge, over.Knowledge)
	setIf(&c.ExpectedOutput, over.ExpectedOutput)
	if over.Tasks != nil {
		c.Tasks = over.Tasks
	}
	setIf(&c.UserSystemPrompt, over.UserSystemPrompt)
	setIf(&c.AppendSystemPrompt, over.AppendSystemPrompt)
}

func setIf[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

// WithTurn returns a copy of b with every field the turn sets overriding the
// persona's. The bundle b is not modified.
func (b *Bundle) WithTurn(t *Turn) *Bundle {
	out := *b
	if t == nil {
		return &out
	}
	out.Context.Overlay(&t.Context)
	if t.Harness != nil {
		out.Persona.Harness = *t.Harness
	}
	if t.Model != nil {
		out.Persona.Model = *t.Model
	}
	if t.ReasoningEffort != nil {
		out.Persona.ReasoningEffort = *t.ReasoningEffort
	}
	if t.Streaming != nil {
		out.Persona.Streaming = *t.Streaming
	}
	return &out
}
