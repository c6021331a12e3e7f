package render

import (
	"fmt"
	"reflect"
)

// nodeOverhead is what measure charges for every value besides its bytes:
// printing a list or map of empty strings still produces separators.
const nodeOverhead = 8

// measure walks values that template functions take or return and bounds
// them: the nesting depth, the number of values (aliases included), and a
// size that charges each value its bytes plus an overhead that grows with
// its depth, the cost of printing it indented. It is cycle-safe because it
// stops at maxNodes.
type measure struct {
	maxDepth int
	maxNodes int
	nodes    int
	size     int
}

func newMeasure(l *Limits) measure {
	return measure{maxDepth: l.MaxValueDepth, maxNodes: 2 * l.MaxUnits}
}

func (m *measure) value(v reflect.Value, depth int) error {
	if depth > m.maxDepth {
		return valueDepthError(m.maxDepth)
	}
	m.nodes++
	if m.nodes > m.maxNodes {
		return valueElementsError(m.maxNodes)
	}
	m.size += nodeOverhead + 2*depth
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			return m.value(v.Elem(), depth)
		}
	case reflect.String:
		m.size += v.Len()
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			m.size += v.Len()
			return nil
		}
		for i := range v.Len() {
			if err := m.value(v.Index(i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if err := m.value(it.Key(), depth+1); err != nil {
				return err
			}
			if err := m.value(it.Value(), depth+1); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if err := m.value(v.Field(i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// reaches reports whether the map target is reachable from v, the test that
// keeps set and merge from building a map that contains itself (which would
// send printing into unbounded recursion).
func reaches(v reflect.Value, target uintptr, nodes *int) (bool, error) {
	*nodes--
	if *nodes < 0 {
		return false, fmt.Errorf("value too large to check for cycles")
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return false, nil
		}
		return reaches(v.Elem(), target, nodes)
	case reflect.Map:
		if v.Pointer() == target {
			return true, nil
		}
		it := v.MapRange()
		for it.Next() {
			if ok, err := reaches(it.Value(), target, nodes); ok || err != nil {
				return ok, err
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if ok, err := reaches(v.Index(i), target, nodes); ok || err != nil {
				return ok, err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if ok, err := reaches(v.Field(i), target, nodes); ok || err != nil {
				return ok, err
			}
		}
	}
	return false, nil
}
