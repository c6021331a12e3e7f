package render

import (
	"errors"
	"fmt"
	"reflect"
)

// The set's own eq, ne, lt, le, gt and ge, with the meaning text/template's
// documentation gives its builtins (text/template#hdr-Functions): they are
// overridden so that the guard charges them, being linear in their
// arguments (comparing two long strings reads both).

var (
	errInvalidComparison = errors.New("invalid type for comparison")
	errMissingComparison = errors.New("missing argument for comparison")
)

// scalar is the class of a basic value for comparison: integers of every
// size compare by arithmetic value, signed with unsigned included.
type scalar int

const (
	notScalar scalar = iota
	boolScalar
	signedScalar
	unsignedScalar
	floatScalar
	complexScalar
	stringScalar
)

func scalarOf(v reflect.Value) scalar { return kindScalar(v.Kind()) }

func kindScalar(k reflect.Kind) scalar {
	switch k {
	case reflect.Bool:
		return boolScalar
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return signedScalar
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return unsignedScalar
	case reflect.Float32, reflect.Float64:
		return floatScalar
	case reflect.Complex64, reflect.Complex128:
		return complexScalar
	case reflect.String:
		return stringScalar
	}
	return notScalar
}

// concrete is the value an interface holds; a nil interface is the invalid
// Value, untyped nil.
func concrete(v reflect.Value) reflect.Value {
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return reflect.Value{}
		}
		return v.Elem()
	}
	return v
}

// nilValue reports whether v is untyped nil or the nil of a nillable kind.
func nilValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return v.IsNil()
	}
	return false
}

// signedVsUnsigned orders a signed and an unsigned integer by value: -1, 0
// or 1 as s is less than, equal to or greater than u.
func signedVsUnsigned(s int64, u uint64) int {
	switch {
	case s < 0 || uint64(s) < u:
		return -1
	case uint64(s) == u:
		return 0
	}
	return 1
}

// equal is a == b for template values (both already concrete).
func equal(a, b reflect.Value) (bool, error) {
	ca, cb := scalarOf(a), scalarOf(b)
	switch {
	case ca == signedScalar && cb == unsignedScalar:
		return signedVsUnsigned(a.Int(), b.Uint()) == 0, nil
	case ca == unsignedScalar && cb == signedScalar:
		return signedVsUnsigned(b.Int(), a.Uint()) == 0, nil
	case ca != cb:
		if a.IsValid() && b.IsValid() {
			return false, fmt.Errorf("incompatible types for comparison: %v and %v", a.Type(), b.Type())
		}
		return false, nil // untyped nil equals no basic value
	}
	switch ca {
	case boolScalar:
		return a.Bool() == b.Bool(), nil
	case signedScalar:
		return a.Int() == b.Int(), nil
	case unsignedScalar:
		return a.Uint() == b.Uint(), nil
	case floatScalar:
		return a.Float() == b.Float(), nil
	case complexScalar:
		return a.Complex() == b.Complex(), nil
	case stringScalar:
		return a.String() == b.String(), nil
	}
	// Neither is basic: nil compares with any nillable value, anything
	// else only with a value of its own kind and a comparable type.
	if a.Kind() != b.Kind() && a.IsValid() && b.IsValid() {
		return false, fmt.Errorf("non-comparable types %s: %v, %s: %v", a, a.Type(), b.Type(), b)
	}
	if nilValue(a) || nilValue(b) {
		return nilValue(a) == nilValue(b), nil
	}
	if !b.Type().Comparable() {
		return false, fmt.Errorf("non-comparable type %s: %v", b, b.Type())
	}
	return a.Interface() == b.Interface(), nil
}

// less is a < b for template values (both already concrete): integers,
// floats and strings only.
func less(a, b reflect.Value) (bool, error) {
	ca, cb := scalarOf(a), scalarOf(b)
	if ca == notScalar || cb == notScalar {
		return false, errInvalidComparison
	}
	switch {
	case ca == signedScalar && cb == unsignedScalar:
		return signedVsUnsigned(a.Int(), b.Uint()) < 0, nil
	case ca == unsignedScalar && cb == signedScalar:
		return signedVsUnsigned(b.Int(), a.Uint()) > 0, nil
	case ca != cb:
		return false, fmt.Errorf("incompatible types for comparison: %v and %v", a.Type(), b.Type())
	}
	switch ca {
	case signedScalar:
		return a.Int() < b.Int(), nil
	case unsignedScalar:
		return a.Uint() < b.Uint(), nil
	case floatScalar:
		return a.Float() < b.Float(), nil
	case stringScalar:
		return a.String() < b.String(), nil
	}
	return false, errInvalidComparison // bool and complex have no order
}

// templateEq is eq: arg1 equals any of the others, which are compared in
// order until one does.
func templateEq(arg1 reflect.Value, others ...reflect.Value) (bool, error) {
	if len(others) == 0 {
		return false, errMissingComparison
	}
	a := concrete(arg1)
	for _, o := range others {
		if ok, err := equal(a, concrete(o)); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

func templateNe(a, b reflect.Value) (bool, error) {
	eq, err := equal(concrete(a), concrete(b))
	return !eq, err
}

func templateLt(a, b reflect.Value) (bool, error) {
	return less(concrete(a), concrete(b))
}

func templateLe(a, b reflect.Value) (bool, error) {
	a, b = concrete(a), concrete(b)
	if lt, err := less(a, b); lt || err != nil {
		return lt, err
	}
	return equal(a, b)
}

func templateGt(a, b reflect.Value) (bool, error) {
	le, err := templateLe(a, b)
	if err != nil {
		return false, err
	}
	return !le, nil
}

func templateGe(a, b reflect.Value) (bool, error) {
	lt, err := templateLt(a, b)
	if err != nil {
		return false, err
	}
	return !lt, nil
}
