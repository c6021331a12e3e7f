package resolve

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// fill sets every field reachable from v to a value that is not zero, so
// that a field the conversion drops shows as a difference.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	default:
		panic("fill: no value for " + v.Type().String())
	}
}

// TestContextTypesAgree fails when the API's context and the render
// input's disagree on a field, or the conversion drops one: a new turn
// variable must reach the templates from spec.context, bundle.json and a
// turn file alike.
func TestContextTypesAgree(t *testing.T) {
	var api v1alpha1.PersonaContext
	fill(reflect.ValueOf(&api).Elem())
	fromAPI, err := json.Marshal(api)
	if err != nil {
		t.Fatal(err)
	}
	converted, err := json.Marshal(convertContext(&api))
	if err != nil {
		t.Fatal(err)
	}
	if string(fromAPI) != string(converted) {
		t.Fatalf("the conversion changes the context:\n api: %s\nrender: %s", fromAPI, converted)
	}
	var full render.Context
	fill(reflect.ValueOf(&full).Elem())
	asRender, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	if string(asRender) != string(fromAPI) {
		t.Fatalf("render.Context has fields PersonaContext lacks:\nrender: %s\n   api: %s", asRender, fromAPI)
	}
}
