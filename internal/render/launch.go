package render

import (
	"cmp"
	"encoding/json"
	"fmt"
)

// The values of PersonaFields.HarnessPrompt and Variant.HarnessPrompt:
// keep the harness's built-in instructions and add the prompt after them,
// or replace them with it. Empty is keep.
const (
	HarnessPromptKeep    = "keep"
	HarnessPromptReplace = "replace"
)

// Launch is what a launcher reads of one prompt of a bundle to start its
// harness: the persona's settings, or a variant's, each field it sets
// overriding the persona's.
type Launch struct {
	// Harness is the harness the prompt is rendered for; never empty.
	Harness         string
	Model           string
	ReasoningEffort string
	// HarnessPrompt is HarnessPromptKeep or HarnessPromptReplace.
	HarnessPrompt string
}

// Launches are the launch settings of every prompt of a bundle.
type Launches struct {
	Persona Launch
	// Variants are the variants', by name.
	Variants map[string]Launch
}

// For is the launch settings of the persona's prompt, or of its variant
// when variant is not empty; false for a variant the bundle does not have.
func (l *Launches) For(variant string) (Launch, bool) {
	if variant == "" {
		return l.Persona, true
	}
	v, ok := l.Variants[variant]
	return v, ok
}

// Launches are the launch settings of every prompt of b.
func (b *Bundle) Launches() *Launches {
	persona := launchFields{Harness: b.Persona.Harness, Model: b.Persona.Model, ReasoningEffort: b.Persona.ReasoningEffort, HarnessPrompt: b.Persona.HarnessPrompt}
	out := &Launches{Persona: launchOf(persona, launchFields{})}
	for _, v := range b.Variants {
		if out.Variants == nil {
			out.Variants = make(map[string]Launch, len(b.Variants))
		}
		// Of variants with the same name, the last, as a render.
		out.Variants[v.Name] = launchOf(persona, launchFields{Harness: v.Harness, Model: v.Model, ReasoningEffort: v.ReasoningEffort, HarnessPrompt: v.HarnessPrompt})
	}
	return out
}

// launchFields are the fields of the persona and of a variant a launch reads.
type launchFields struct {
	Harness         string `json:"harness"`
	Model           string `json:"model"`
	ReasoningEffort string `json:"reasoningEffort"`
	HarnessPrompt   string `json:"harnessPrompt"`
}

// ReadLaunches reads the launch settings of bundle.json. It decodes the
// persona's fields and the variants alone: the sections, layers and
// composed body, nearly all of a bundle of up to 1 MiB, are scanned and
// never kept.
func ReadLaunches(raw []byte) (*Launches, error) {
	var b struct {
		Persona  launchFields `json:"persona"`
		Variants []struct {
			Name string `json:"name"`
			launchFields
		} `json:"variants"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	out := &Launches{Persona: launchOf(b.Persona, launchFields{})}
	for _, v := range b.Variants {
		if out.Variants == nil {
			out.Variants = make(map[string]Launch, len(b.Variants))
		}
		out.Variants[v.Name] = launchOf(b.Persona, v.launchFields) // of variants with the same name, the last, as a render
	}
	return out, nil
}

// launchOf is the settings of a prompt: the variant's fields that are set
// over the persona's, as a render takes them (newData).
func launchOf(persona, variant launchFields) Launch {
	return Launch{
		Harness:         cmp.Or(variant.Harness, persona.Harness, DefaultHarness),
		Model:           cmp.Or(variant.Model, persona.Model),
		ReasoningEffort: cmp.Or(variant.ReasoningEffort, persona.ReasoningEffort),
		HarnessPrompt:   cmp.Or(variant.HarnessPrompt, persona.HarnessPrompt, HarnessPromptKeep),
	}
}
