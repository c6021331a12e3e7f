package admission

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/internal/render"
)

// checkTemplate reports a template source that would not be accepted (SPEC
// personas.md#functions, personas.md#validating-before-apply, personas.md#limits): too large, not parsing with the function set, a non-literal
// include, or a field chain on . that does not exist. kind and name make the
// section name (platform.<key>, extension.<id>, layer.<name>) that the
// message carries, as a render failure's would.
func checkTemplate(p *field.Path, kind render.SectionKind, name, src string) field.ErrorList {
	_, errs := inspectTemplate(p, kind, name, src)
	return errs
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
