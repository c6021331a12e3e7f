package admission

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkShape walks the raw value v against the Go type t by the json tags of
// its structs, and reports every key t does not declare and every value whose
// JSON type is not the one t decodes from. Deriving the walk from the API
// types keeps it in step with them: a field added there is known here. The
// walk recurses along t, which has finite depth, so a cyclic or deeply
// nested raw value cannot make it run away.
func checkShape(p *field.Path, v any, t reflect.Type) field.ErrorList {
	w := shapeWalk{unknownKeys: true}
	w.walk(p, v, t)
	return w.errs.list(p)
}

// shapeWalk is one walk of checkShape. Without unknownKeys it reports
// values of the wrong type only, as a lenient decode would fail on them.
type shapeWalk struct {
	errs        listedErrors
	unknownKeys bool
}

// jsonUnmarshaler is implemented by types that read their own JSON (such as
// metav1.Time, a string): the walk cannot know their shape and skips them.
var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

func (w *shapeWalk) walk(p *field.Path, v any, t reflect.Type) {
	errs := &w.errs
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		// Unset: the API server prunes nulls of non-nullable fields.
		return
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			errs.add(func() *field.Error { return objectTypeError(p, v, t) })
			return
		}
		s := structOf(t)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			ft, ok := s.fields[k]
			if !ok {
				if w.unknownKeys {
					errs.add(func() *field.Error { return unknownField(KeyPath(p, k), k, s.names) })
				}
				continue
			}
			w.walk(p.Child(k), m[k], ft)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			errs.add(func() *field.Error { return typeError(p, v, "an object") })
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			w.walk(KeyPath(p, k), m[k], t.Elem())
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			// []byte is a base64 string in JSON.
			checkScalar(p, v, reflect.TypeFor[string](), errs)
			return
		}
		l, ok := v.([]any)
		if !ok {
			errs.add(func() *field.Error { return typeError(p, v, "a list") })
			return
		}
		for i, e := range l {
			if e == nil {
				// A null list item is not pruned; it is a type error.
				errs.add(func() *field.Error { return typeError(p.Index(i), e, expected(t.Elem())) })
				continue
			}
			w.walk(p.Index(i), e, t.Elem())
		}
	default:
		checkScalar(p, v, t, errs)
	}
}

// checkScalar reports a non-null value that is not of scalar type t.
func checkScalar(p *field.Path, v any, t reflect.Type, errs *listedErrors) {
	ok := true
	switch t.Kind() {
	case reflect.String:
		_, ok = v.(string)
	case reflect.Bool:
		_, ok = v.(bool)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		ok = isInteger(v)
	case reflect.Float32, reflect.Float64:
		ok = jsonType(v) == "a number"
	}
	// Interfaces and anything else hold any JSON value.
	if !ok {
		errs.add(func() *field.Error { return typeError(p, v, expected(t)) })
	}
}

func isInteger(v any) bool {
	switch v := v.(type) {
	case float64:
		return v == float64(int64(v))
	case float32:
		return v == float32(int64(v))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	case interface{ Int64() (int64, error) }: // json.Number
		_, err := v.Int64()
		return err == nil
	}
	return false
}

// expected names the JSON type values of t decode from.
func expected(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string"
		}
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value"
}

// jsonStruct is the JSON view of a struct type: its keys, in declaration
// order, and the type of each.
type jsonStruct struct {
	names  []string
	fields map[string]reflect.Type
}

var structCache sync.Map // reflect.Type → *jsonStruct

func structOf(t reflect.Type) *jsonStruct {
	if s, ok := structCache.Load(t); ok {
		return s.(*jsonStruct)
	}
	s := &jsonStruct{fields: map[string]reflect.Type{}}
	addFields(s, t)
	actual, _ := structCache.LoadOrStore(t, s)
	return actual.(*jsonStruct)
}

// addFields adds the JSON keys of t's fields as encoding/json sees them,
// flattening embedded structs without a name of their own.
func addFields(s *jsonStruct, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(s, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := s.fields[name]; !dup {
			s.names = append(s.names, name)
		}
		s.fields[name] = f.Type
	}
}
