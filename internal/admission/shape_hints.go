package admission

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// objectTypeError reports a value where an object of struct type t is
// expected. A string there is usually the one field the object needs written
// bare (layers: [base] for layers: [{name: base}]), so the message shows the
// object to write instead.
func objectTypeError(p *field.Path, v any, t reflect.Type) *field.Error {
	err := typeError(p, v, "an object")
	s, ok := v.(string)
	if !ok {
		return err
	}
	if key := soleRequiredString(t); key != "" {
		err.Detail += fmt.Sprintf("; write {%s: %s}", key, yamlScalar(s))
	} else if _, ok := structOf(t).fields["replace"]; ok {
		err.Detail += fmt.Sprintf("; write {replace: %s} or {remove: true}", yamlScalar(s))
	}
	return err
}

// soleRequiredString is the JSON key of the one string field of struct t that
// is required (no omitempty), or "" when t has none or several required fields.
func soleRequiredString(t reflect.Type) string {
	key := ""
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" || strings.Contains(opts, "omitempty") || strings.Contains(opts, "inline") {
			continue
		}
		if key != "" || f.Type.Kind() != reflect.String {
			return ""
		}
		key = name
	}
	return key
}

// plainScalar is a string YAML reads back as the same string without quotes.
var plainScalar = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._/-]*$`)

// yamlScalar is s as it would be written in a YAML flow mapping: bare when
// that reads back as the same string, else double-quoted.
func yamlScalar(s string) string {
	s = truncate(s)
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		return fmt.Sprintf("%q", s)
	}
	if plainScalar.MatchString(s) {
		return s
	}
	return fmt.Sprintf("%q", s)
}
