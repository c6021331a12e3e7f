package render

import (
	"fmt"
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

// Default is the engine with the limits of SPEC §9, shared by the process.
func Default() *Engine { return defaultEngine }

// Limits returns the engine's limits.
func (e *Engine) Limits() Limits { return e.limits }

// Section names of rendered pieces.
func platformSection(key string) string { return "platform." + key }
func extensionSection(id string) string { return "extension." + id }
func layerSection(name string) string   { return "layer." + name }

// Names of the literal pieces appended last (SPEC §5.4 step 3).
const (
	UserSystemPromptPiece   = "userSystemPrompt"
	AppendSystemPromptPiece = "appendSystemPrompt"
)

// RenderError reports a section that does not render (SPEC §7 RenderFailed).
type RenderError struct {
	Persona string
	Variant string // empty for the persona's own prompt
	Section string
	Err     error
}

func (e *RenderError) Error() string {
	variant := ""
	if e.Variant != "" {
		variant = "variant " + e.Variant + ": "
	}
	return fmt.Sprintf("the system prompt of persona %q does not render: %srender system prompt section %s: %v", e.Persona, variant, e.Section, e.Err)
}

func (e *RenderError) Unwrap() error { return e.Err }

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
	var v *Variant
	if variant != "" {
		for i := range b.Variants {
			if b.Variants[i].Name == variant {
				v = &b.Variants[i]
			}
		}
		if v == nil {
			return nil, fmt.Errorf("persona %q has no variant %q", b.Persona.Name, variant)
		}
	}
	x := e.pool.get(e)
	defer e.pool.put(x)
	x.budget.reset(&e.limits, time.Now())
	x.includes = b.Includes
	r := renderer{engine: e, x: x, bundle: b, variant: variant, data: newData(b, v)}
	pieces, err := r.pieces()
	if err != nil {
		return nil, err
	}
	return &Prompt{Text: joinPieces(pieces), Pieces: pieces}, nil
}

// renderer is one render in progress.
type renderer struct {
	engine  *Engine
	x       *executor
	bundle  *Bundle
	variant string
	data    *Data
}

func (r *renderer) fail(section string, err error) error {
	return &RenderError{Persona: r.bundle.Persona.Name, Variant: r.variant, Section: section, Err: err}
}

// piece renders one template to a normalized piece.
func (r *renderer) piece(section, origin, src string) (Piece, error) {
	out, err := r.x.execute(r.engine.cache.get(section, src), r.data)
	if err != nil {
		return Piece{}, r.fail(section, err)
	}
	return Piece{Name: section, Origin: origin, Text: Normalize(out)}, nil
}

// pieces composes the prompt (SPEC §5.4): platform sections, extensions,
// layers by rank and mode, then the literal user and appended prompts.
func (r *renderer) pieces() ([]Piece, error) {
	b := r.bundle
	pieces := make([]Piece, 0, len(b.Sections)+len(b.Extensions)+len(b.Layers)+2)
	keep := func(p Piece) {
		if p.Text != "" {
			pieces = append(pieces, p)
		}
	}
	for _, s := range b.Sections {
		p, err := r.piece(platformSection(s.Key), s.Origin, s.Template)
		if err != nil {
			return nil, err
		}
		keep(p)
	}
	for _, ext := range b.Extensions {
		p, err := r.piece(extensionSection(ext.ID), ext.Origin, ext.Template)
		if err != nil {
			return nil, err
		}
		keep(p)
	}
	for _, l := range sortedLayers(b.Layers) {
		var p Piece
		if l.Mode != ModeDisable {
			var err error
			r.x.chain = append(r.x.chain[:0], l.Name)
			p, err = r.piece(layerSection(l.Name), "layer/"+l.Name, l.Template)
			r.x.chain = r.x.chain[:0]
			if err != nil {
				return nil, err
			}
		}
		pieces = applyLayer(pieces, l.Mode, p)
	}
	origin := "persona/" + b.Persona.Name
	keep(Piece{Name: UserSystemPromptPiece, Origin: origin, Text: Normalize(r.data.UserSystemPrompt)})
	keep(Piece{Name: AppendSystemPromptPiece, Origin: origin, Text: Normalize(r.data.AppendSystemPrompt)})
	return pieces, nil
}

// Includes returns the layer names that a template's include calls name,
// in order. A template that does not parse includes nothing here; rendering
// it reports the parse error.
func (e *Engine) Includes(section, src string) []string {
	return e.cache.get(section, src).includes
}

// SectionName is the name a platform section, extension or layer template
// is parsed and reported under: platform.<key>, extension.<id>, layer.<name>.
func SectionName(kind, name string) string {
	switch kind {
	case "platform":
		return platformSection(name)
	case "extension":
		return extensionSection(name)
	}
	return layerSection(name)
}
