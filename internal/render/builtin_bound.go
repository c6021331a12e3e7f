package render

import (
	"reflect"
	"text/template"
)

// comparisons is the set's eq, ne, lt, le, gt, ge and index bound to x's
// budget. Like Murmur's functions they are typed rather than guarded, being
// among the commonest calls of a template (every `if eq .Harness "…"`):
// each charges, before it runs, the linear work of its arguments
// (linearWork), a string by its length and any other value by what it
// holds, so a comparison of long strings, or of many, is refused when the
// time left does not cover it.
func (x *executor) comparisons() template.FuncMap {
	charge := func(name string, size, values int) error {
		return x.budget.charge(name, cost{work: linearWork(size, values)})
	}
	pair := func(name string, cmp func(a, b reflect.Value) (bool, error)) func(a, b reflect.Value) (bool, error) {
		return func(a, b reflect.Value) (bool, error) {
			if err := charge(name, addCap(argBytes(a), argBytes(b)), 2); err != nil {
				return false, err
			}
			return cmp(a, b)
		}
	}
	return template.FuncMap{
		"eq": func(arg1 reflect.Value, others ...reflect.Value) (bool, error) {
			size := argBytes(arg1)
			for _, o := range others {
				size = addCap(size, argBytes(o))
			}
			if err := charge("eq", size, 1+len(others)); err != nil {
				return false, err
			}
			return templateEq(arg1, others...)
		},
		"ne": pair("ne", templateNe),
		"lt": pair("lt", templateLt),
		"le": pair("le", templateLe),
		"gt": pair("gt", templateGt),
		"ge": pair("ge", templateGe),
		"index": func(item reflect.Value, keys ...reflect.Value) (reflect.Value, error) {
			// The item is looked into, not walked: its keys are the work.
			size := 0
			for _, k := range keys {
				size = addCap(size, argBytes(k))
			}
			if err := charge("index", size, 1+len(keys)); err != nil {
				return reflect.Value{}, err
			}
			return templateIndex(item, keys...)
		},
	}
}

// argBytes is the size an argument's comparison or hash reads: a string's
// length, a number's or a bool's few bytes, and for any other value the
// size of what it holds.
func argBytes(v reflect.Value) int {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return v.Len()
	case reflect.Invalid, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return 8
	}
	size, _ := sizeOf(v)
	return size
}
