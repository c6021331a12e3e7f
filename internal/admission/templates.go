package admission

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/internal/render"
)

// checkTemplate reports a template source that would not be accepted (SPEC
// personas.md#functions, personas.md#validating-before-apply, personas.md#limits): too large, not parsing with the function set, a non-literal
// include, or a field chain on . that does not exist. kind and name make the
// section name (platform.<key>, extension.<id>, layer.<name>) that the
// message carries, as a render failure's would.
func checkTemplate(p *field.Path, kind render.SectionKind, name, src string, budget *templateBudget) field.ErrorList {
	if !budget.take(src) {
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf(
			"the object's templates have more than %d KiB inside {{ }} in all, which take too long to check; this one is not checked", MaxActionBytes>>10))}
	}
	_, errs := inspectTemplate(p, kind, name, src)
	return errs
}

// MaxActionBytes bounds the template source inside actions ({{ }}) of
// one object's templates together: parsing is what checking an object
// costs, about 55 ms of CPU for 64 KiB of the densest actions, and a
// Persona may have any number of extensions; prose outside actions costs
// almost nothing. No real prompt comes near it.
const MaxActionBytes = 256 << 10

// templateBudget is what is left of an object's MaxActionBytes; nil
// bounds nothing (an object of one template, which MaxSourceBytes bounds).
type templateBudget struct{ left int }

func newTemplateBudget() *templateBudget { return &templateBudget{left: MaxActionBytes} }

// take takes src's action bytes from what is left, and reports whether
// they fit.
func (b *templateBudget) take(src string) bool {
	if b == nil {
		return true
	}
	n := actionBytes(src)
	if n > b.left {
		b.left = 0
		return false
	}
	b.left -= n
	return true
}

// actionBytes is how many bytes of src are inside actions, as
// text/template's lexer reads them: from each {{ to the }} that ends it,
// past the quoted and raw strings, character constants and comments in it,
// which may hold }}. An action that does not end runs to the end.
func actionBytes(src string) int {
	n := 0
	for {
		open := strings.Index(src, "{{")
		if open < 0 {
			return n
		}
		src = src[open+2:]
		end := actionEnd(src)
		n += 2 + end
		src = src[end:]
	}
}

// actionEnd is where the action whose {{ comes just before src ends: just
// past its }}, or len(src).
func actionEnd(src string) int {
	if strings.HasPrefix(strings.TrimLeft(src, "- "), "/*") {
		c := strings.Index(src, "*/")
		if c < 0 {
			return len(src)
		}
		if e := strings.Index(src[c+2:], "}}"); e >= 0 {
			return c + 2 + e + 2
		}
		return len(src)
	}
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '"', '\'':
			quote := src[i]
			for i++; i < len(src) && src[i] != quote; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '`':
			raw := strings.IndexByte(src[i+1:], '`')
			if raw < 0 {
				return len(src)
			}
			i += 1 + raw
		case '}':
			if i+1 < len(src) && src[i+1] == '}' {
				return i + 2
			}
		}
	}
	return len(src)
}

// inspectTemplate is checkTemplate that also returns the layers the
// template's include calls name. The parse is not cached: admission sees
// templates that are never stored (dry runs, refused objects, the CLI).
func inspectTemplate(p *field.Path, kind render.SectionKind, name, src string) ([]string, field.ErrorList) {
	engine := render.Default()
	includes, err := engine.Inspect(kind, name, src)
	if err == nil {
		return includes, nil
	}
	var limit *render.LimitError
	if errors.As(err, &limit) && limit.Limit == "source" {
		tooLong := field.TooLong(p, nil, engine.Limits().MaxSourceBytes)
		tooLong.Detail = limit.Error()
		return includes, field.ErrorList{tooLong}
	}
	// The source is left out of the message: it can be 64 KiB.
	return includes, field.ErrorList{field.Invalid(p, field.OmitValueType{}, err.Error())}
}
