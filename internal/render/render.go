package render

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Engine renders bundles under a set of limits. It caches parsed templates
// and pools executors; it is safe for concurrent use.
type Engine struct {
	limits Limits
	cache  *parseCache
	pool   executorPool
}

// NewEngine returns an engine enforcing l.
func NewEngine(l Limits) *Engine {
	e := &Engine{limits: l}
	e.cache = newParseCache(&e.limits)
	return e
}

var defaultEngine = NewEngine(DefaultLimits)

// Default is the engine with the limits of personas.md#limits, shared by the process.
func Default() *Engine { return defaultEngine }

// Limits returns the engine's limits.
func (e *Engine) Limits() Limits { return e.limits }

// SectionKind is the kind of a template: a platform section, an extension
// or a layer.
type SectionKind string

// The kinds of templates.
const (
	KindPlatform  SectionKind = "platform"
	KindExtension SectionKind = "extension"
	KindLayer     SectionKind = "layer"
	// KindClusterLayer is a ClusterPromptLayer's template.
	KindClusterLayer SectionKind = "clusterlayer"
)

// SectionName is the name a template is parsed and reported under:
// platform.<key>, extension.<id>, layer.<name> or clusterlayer.<name>
// (personas.md#conditions).
func SectionName(kind SectionKind, name string) string { return string(kind) + "." + name }

// Names of the literal pieces appended last (personas.md#composition).
const (
	UserSystemPromptPiece   = "userSystemPrompt"
	AppendSystemPromptPiece = "appendSystemPrompt"
)

// Prompt is one rendered system prompt.
type Prompt struct {
	// Text is the final prompt plus one trailing newline, or empty when
	// nothing remains.
	Text string
	// Pieces are the normalized pieces Text joins, in order.
	Pieces []Piece
}

// Render renders the system prompt of b, or of its variant when variant is
// not empty.
func (e *Engine) Render(b *Bundle, variant string) (*Prompt, error) {
	return e.render(b, variant, time.Time{})
}

// render is Render within personaDeadline, the budget the persona's prompt
// and its variants share, when it is not zero.
func (e *Engine) render(b *Bundle, variant string, personaDeadline time.Time) (*Prompt, error) {
	v, err := findVariant(b, variant)
	if err != nil {
		return nil, err
	}
	x := e.pool.get(e)
	defer e.pool.put(x)
	x.budget.reset(&e.limits, time.Now(), personaDeadline)
	x.includes = b.Includes
	x.flights = fillData(&x.data, b, v, x.flights)
	r := renderer{x: x, bundle: b, variant: variant, data: &x.data, out: x.out[:0]}
	spans, err := r.spans()
	// Keep the grown buffers for the executor's next render.
	x.out, x.spans = r.out, spans[:0]
	if err != nil {
		return nil, err
	}
	text, pieces := joinSpans(r.out, spans)
	return &Prompt{Text: text, Pieces: pieces}, nil
}

// findVariant returns the variant of b named variant, or nil for the
// persona's own prompt when variant is empty. Of variants with the same
// name, the last one wins.
func findVariant(b *Bundle, variant string) (*Variant, error) {
	if variant == "" {
		return nil, nil
	}
	var v *Variant
	for i := range b.Variants {
		if b.Variants[i].Name == variant {
			v = &b.Variants[i]
		}
	}
	if v == nil {
		return nil, fmt.Errorf("persona %q has no variant %q; %s", b.Persona.Name, variant, variantHint(b, variant))
	}
	return v, nil
}

// renderer is one render in progress. Every piece is rendered into out and
// composed as spans of it.
type renderer struct {
	x       *executor
	bundle  *Bundle
	variant string
	data    *Data
	out     []byte
}

func (r *renderer) fail(kind SectionKind, name string, err error) error {
	return &RenderError{Persona: r.bundle.Persona.Name, Variant: r.variant, Section: SectionName(kind, name), Err: err}
}

// piece renders one template into out, normalized. A layer's piece passes
// no origin and takes its template's (parsed.origin).
func (r *renderer) piece(kind SectionKind, name, origin, src string) (span, error) {
	start := len(r.out)
	p := r.x.engine.cache.get(kind, name, src)
	if origin == "" {
		origin = p.origin
	}
	out, err := r.x.executeTo(r.out, p, r.data)
	r.out = out
	if err != nil {
		return span{}, r.fail(kind, name, err)
	}
	return r.literal(p.name, origin, start), nil
}

// literal makes the text written to out since start a normalized span.
func (r *renderer) literal(section, origin string, start int) span {
	from, to := normalizedBounds(r.out[start:])
	return span{section: section, origin: origin, start: start + from, end: start + to}
}

// spans composes the prompt (personas.md#composition): platform sections,
// extensions, layers by rank and mode, the first and last guardrails around
// the result, the literal user and appended prompts, then the final
// guardrails.
func (r *renderer) spans() ([]span, error) {
	b := r.bundle
	spans := slices.Grow(r.x.spans[:0], len(b.Sections)+len(b.Extensions)+len(b.Layers)+2)
	var err error
	for _, s := range b.Sections {
		if spans, err = r.appendPiece(spans, KindPlatform, s.Key, s.Origin, s.Template); err != nil {
			return nil, err
		}
	}
	for _, ext := range b.Extensions {
		if spans, err = r.appendPiece(spans, KindExtension, ext.ID, ext.Origin, ext.Template); err != nil {
			return nil, err
		}
	}
	if spans, err = r.applyLayers(spans); err != nil {
		return nil, err
	}
	if spans, err = r.placeClusterLayers(spans); err != nil {
		return nil, err
	}
	return r.appendFinalClusterLayers(r.appendCallerPrompts(spans))
}

// appendPiece renders one template and appends it to spans unless it is empty
// (personas.md#composition).
func (r *renderer) appendPiece(spans []span, kind SectionKind, name, origin, src string) ([]span, error) {
	p, err := r.piece(kind, name, origin, src)
	if err != nil {
		return nil, err
	}
	return appendNonEmpty(spans, p), nil
}

// applyLayers renders the layers in rank order and applies each by its mode
// to the spans so far (personas.md#layers). A disable layer is not rendered.
func (r *renderer) applyLayers(spans []span) ([]span, error) {
	for _, l := range sortedLayers(r.bundle.Layers) {
		var p span
		if l.Mode != ModeDisable {
			var err error
			if p, err = r.layerPiece(l); err != nil {
				return nil, err
			}
		}
		spans = applyLayer(spans, l.Mode, p)
	}
	return spans, nil
}

// layerPiece renders a layer with the include chain starting at it, so that
// a layer that includes itself is a cycle.
func (r *renderer) layerPiece(l Layer) (span, error) {
	r.x.chain = append(r.x.chain[:0], l.Name)
	p, err := r.piece(KindLayer, l.Name, "", l.Template)
	r.x.chain = r.x.chain[:0]
	return p, err
}

// placeClusterLayers puts the selected ClusterPromptLayers around the text
// composed so far, in name order: first ones before it, last ones after;
// final ones wait for appendFinalClusterLayers. Nothing a Persona or
// PromptLayer does acts after this step, so none can remove or reorder
// them (clusterpromptlayers.md).
func (r *renderer) placeClusterLayers(spans []span) ([]span, error) {
	var first []span
	for _, c := range sortedClusterLayers(r.bundle.ClusterLayers) {
		if c.Position == PositionFinal {
			continue
		}
		p, err := r.clusterLayerPiece(c)
		if err != nil {
			return nil, err
		}
		if c.Position == PositionFirst {
			first = appendNonEmpty(first, p)
		} else {
			spans = appendNonEmpty(spans, p)
		}
	}
	if len(first) == 0 {
		return spans, nil
	}
	return append(first, spans...), nil
}

// appendFinalClusterLayers appends the final ClusterPromptLayers, in name
// order, after everything, the caller prompts included: they have the last
// word (clusterpromptlayers.md#position).
func (r *renderer) appendFinalClusterLayers(spans []span) ([]span, error) {
	for _, c := range sortedClusterLayers(r.bundle.ClusterLayers) {
		if c.Position != PositionFinal {
			continue
		}
		p, err := r.clusterLayerPiece(c)
		if err != nil {
			return nil, err
		}
		spans = appendNonEmpty(spans, p)
	}
	return spans, nil
}

func (r *renderer) clusterLayerPiece(c ClusterLayer) (span, error) {
	return r.piece(KindClusterLayer, c.Name, "", c.Template)
}

func sortedClusterLayers(layers []ClusterLayer) []ClusterLayer {
	byName := func(a, b ClusterLayer) int { return cmp.Compare(a.Name, b.Name) }
	if slices.IsSortedFunc(layers, byName) {
		return layers
	}
	return slices.SortedFunc(slices.Values(layers), byName)
}

// appendCallerPrompts appends the user and appended system prompts as
// literal text, never executed as templates (personas.md#composition).
func (r *renderer) appendCallerPrompts(spans []span) []span {
	spans = r.appendCallerPrompt(spans, UserSystemPromptPiece, r.data.UserSystemPrompt)
	return r.appendCallerPrompt(spans, AppendSystemPromptPiece, r.data.AppendSystemPrompt)
}

func (r *renderer) appendCallerPrompt(spans []span, name, text string) []span {
	start := len(r.out)
	r.out = append(r.out, text...)
	s := r.literal(name, "", start)
	if s.start >= s.end {
		return spans // most prompts have none: no origin to build
	}
	s.origin = "persona/" + r.bundle.Persona.Name
	return append(spans, s)
}

// Includes returns the layer names that a template's include calls name,
// in order. A template that does not parse includes nothing here; rendering
// it reports the parse error.
func (e *Engine) Includes(kind SectionKind, name, src string) []string {
	return e.cache.get(kind, name, src).includes
}
