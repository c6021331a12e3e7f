package render

import (
	"fmt"
	"math"
	"reflect"
)

// templateIndex is the set's own index, with the meaning text/template's
// documentation gives its builtin: index x 1 2 3 is x[1][2][3], of maps,
// slices, arrays and strings; a key a map lacks yields the zero value of
// its elements. It is overridden so that the guard charges it: looking up a
// map by a long key hashes all of it.
func templateIndex(item reflect.Value, keys ...reflect.Value) (reflect.Value, error) {
	item = concrete(item)
	if !item.IsValid() {
		return reflect.Value{}, fmt.Errorf("index of untyped nil")
	}
	for _, key := range keys {
		var err error
		if item, err = through(item); err != nil {
			return reflect.Value{}, err
		}
		if item, err = indexOne(item, concrete(key)); err != nil {
			return reflect.Value{}, err
		}
	}
	return item, nil
}

// through follows pointers and interfaces to the value they hold.
func through(v reflect.Value) (reflect.Value, error) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return v, fmt.Errorf("index of nil pointer")
		}
		v = v.Elem()
	}
	return v, nil
}

func indexOne(item, key reflect.Value) (reflect.Value, error) {
	switch item.Kind() {
	case reflect.Array, reflect.Slice, reflect.String:
		i, err := position(key, item.Len())
		if err != nil {
			return reflect.Value{}, err
		}
		return item.Index(i), nil
	case reflect.Map:
		k, err := mapKey(key, item.Type().Key())
		if err != nil {
			return reflect.Value{}, err
		}
		if v := item.MapIndex(k); v.IsValid() {
			return v, nil
		}
		return reflect.Zero(item.Type().Elem()), nil
	}
	return reflect.Value{}, fmt.Errorf("can't index item of type %s", item.Type())
}

// position is key as an index of a list of n elements.
func position(key reflect.Value, n int) (int, error) {
	var i int64
	switch scalarOf(key) {
	case signedScalar:
		i = key.Int()
	case unsignedScalar:
		if key.Uint() > math.MaxInt64 {
			return 0, fmt.Errorf("index out of range: %d", key.Uint())
		}
		i = int64(key.Uint())
	default:
		if !key.IsValid() {
			return 0, fmt.Errorf("cannot index slice/array with nil")
		}
		return 0, fmt.Errorf("cannot index slice/array with type %s", key.Type())
	}
	if i < 0 || i >= int64(n) {
		return 0, fmt.Errorf("index out of range: %d", i)
	}
	return int(i), nil
}

// mapKey is key as a key of type t: nil is the zero of a nillable type, and
// an integer converts to an integer key type.
func mapKey(key reflect.Value, t reflect.Type) (reflect.Value, error) {
	if !key.IsValid() {
		switch t.Kind() {
		case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
			return reflect.Zero(t), nil
		}
		return reflect.Value{}, fmt.Errorf("value is nil; should be of type %s", t)
	}
	if key.Type().AssignableTo(t) {
		return key, nil
	}
	if integer(scalarOf(key)) && integer(kindScalar(t.Kind())) {
		return key.Convert(t), nil
	}
	return reflect.Value{}, fmt.Errorf("value has type %s; should be %s", key.Type(), t)
}

func integer(s scalar) bool { return s == signedScalar || s == unsignedScalar }
