package admission

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// FuzzValidate feeds arbitrary JSON objects to Validate as every kind: it
// must never panic, and every error must carry a path and render.
func FuzzValidate(f *testing.F) {
	seeds := []string{
		fullPersona,
		platform("prMergability", "{remove: false, replce: x}"),
		extension("{{ range .Repos }}{{ .Nmae }}{{ end }}"),
		extension(`{{ include .Name . }}{{ env "HOME" }}`),
		persona("  variants: [{name: a}, {name: a, harness: x}]\n  inherit: [A]\n  layers: [{}]\n"),
		layer("  mode: disable\n"),
		layer("  template: x\n  templateFrom: {configMapKeyRef: {name: c, key: k}}\n"),
		layer("  source: Bad_Source\n  mode: merge\n  templateFrom: {configMapKeyRef: {nme: c}}\n"),
		guardrail("  position: up\n  template: '{{ include \"a\" . }}'\n  namespaceSelector: {matchLabels: {'a b': c}, matchExpressions: [{key: k, operator: In}, 1]}\n"),
	}
	for _, file := range systemPromptSamples {
		seeds = append(seeds, sample(f, file))
	}
	for _, doc := range seeds {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
	}
	f.Add([]byte(`{"spec":{"systemPrompt":{"platform":{"waiver":null,"":{}},"extensions":[null,1,"x",{}]}}}`))
	f.Add([]byte(`{"metadata":[],"spec":{"context":{"repos":[{"name":{}}],"knowledge":1e400}}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))

	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
			return // not an object
		}
		for _, kind := range []string{v1alpha1.PersonaKind, v1alpha1.PromptLayerKind, v1alpha1.ClusterPromptLayerKind} {
			obj["kind"] = kind
			errs := Validate(obj)
			for _, e := range errs {
				if e == nil || e.Field == "" {
					t.Fatalf("kind %s: error without a path: %v", kind, e)
				}
				_ = e.Error()
			}
		}
	})
}
