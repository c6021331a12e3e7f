package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// Decode converts raw, a value as JSON or YAML decodes to (map[string]any,
// []any, scalars), into out, a pointer to a typed value. Every value of the
// wrong JSON type is reported by its field path under p, with the message
// admission gives it; with unknownKeys, so is every key out's type does not
// declare, with a did-you-mean. A Go decoding error never reaches the list:
// the message names the field and what to write, not a Go type. Keys match
// case-sensitively, as the API server matches them.
func Decode(p *field.Path, raw any, out any, unknownKeys bool) field.ErrorList {
	w := shapeWalk{unknownKeys: unknownKeys}
	w.walk(p, raw, reflect.TypeOf(out).Elem())
	if errs := w.errs.list(p); len(errs) > 0 {
		return errs
	}
	// Encoded again without escaping <, > and &, which would take six
	// bytes each.
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	enc.SetEscapeHTML(false)
	err := enc.Encode(raw)
	if err == nil {
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(j.Bytes(), out)
	}
	if err != nil {
		// Only a type that reads its own JSON gets here (a metav1.Time that
		// is not a time): the walk cannot see inside it.
		return field.ErrorList{field.Invalid(p, field.OmitValueType{}, DecodeErrorDetail(err))}
	}
	return nil
}

// DecodeErrorDetail says what is wrong with a document encoding/json could
// not decode, without Go's wording: the offset of a syntax error, or the field
// and JSON types of a type mismatch.
func DecodeErrorDetail(err error) string {
	var syntax *json.SyntaxError
	var mismatch *json.UnmarshalTypeError
	if isSyntax, offset := sigsjson.SyntaxErrorOffset(err); isSyntax {
		return fmt.Sprintf("is not valid JSON: a syntax error at byte %d", offset)
	}
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("is not valid JSON: a syntax error at byte %d", syntax.Offset)
	case errors.As(err, &mismatch) && mismatch.Field != "":
		return fmt.Sprintf("%s: must be %s, not %s", mismatch.Field, expected(mismatch.Type), jsonValueName(mismatch.Value))
	case errors.As(err, &mismatch):
		return fmt.Sprintf("must be %s, not %s", expected(mismatch.Type), jsonValueName(mismatch.Value))
	}
	return "is not a value of the expected shape"
}

// jsonValueName names the JSON kind encoding/json reports in
// UnmarshalTypeError.Value ("string", "number", "array", ...).
func jsonValueName(v string) string {
	switch v {
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	}
	return "a number"
}
