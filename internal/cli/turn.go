package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/internal/render"
)

// readInput reads a file, or stdin for "-".
func readInput(path string, stdin io.Reader) ([]byte, string, error) {
	if path == manifest.Stdin {
		raw, err := io.ReadAll(stdin)
		return raw, manifest.StdinName, err
	}
	raw, err := os.ReadFile(path)
	return raw, path, err
}

// harnesses are the values of harness.
var harnesses = []string{string(v1alpha1.HarnessClaude), string(v1alpha1.HarnessCodex), string(v1alpha1.HarnessOpencode)}

// parseTurn reads a turn context (--turn, docs/cli.md): one JSON or YAML object with
// the context keys of personas.md#writing-a-persona-spec plus harness, model, reasoningEffort and
// streaming. It is strict: keys are case-sensitive, and an unknown or
// repeated key is an error, so that a misspelling is not silently ignored.
func parseTurn(raw []byte) (*render.Turn, error) {
	n, err := manifest.CountDocuments(raw)
	if err != nil && startsWithBrace(raw) {
		// A turn written as a YAML flow mapping, {harness: codex}, starts
		// like JSON but is not.
		n, err = manifest.CountYAMLDocuments(raw)
	}
	if err != nil {
		return nil, err
	} else if n > 1 {
		return nil, fmt.Errorf("holds %d documents; a turn context is one object", n)
	}
	j, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %s", manifest.CleanYAMLError(err))
	}
	if t := bytes.TrimSpace(j); len(t) > 0 && t[0] != '{' && string(t) != "null" {
		return nil, errors.New("must be an object")
	}
	var turn render.Turn
	if err := checkDocument(j, &turn); err != nil {
		return nil, err
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &turn); err != nil {
		return nil, errors.New(admission.DecodeErrorDetail(err))
	}
	if turn.Harness != nil && !slices.Contains(harnesses, *turn.Harness) {
		return nil, fmt.Errorf("harness: unsupported value %q: supported values: %s", *turn.Harness, strings.Join(harnesses, ", "))
	}
	return &turn, nil
}

func startsWithBrace(raw []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}
