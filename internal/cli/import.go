package cli

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/internal/suggest"
)

type importOptions struct {
	namespace string
}

func newImportCommand(s *Streams) *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import FILE.md...",
		Short: "Convert Markdown persona files into Persona manifests",
		Long: `Convert Markdown persona files with YAML front matter into Persona
manifests, printed to standard output as one multi-document YAML stream.

  ---
  name: reviewer
  model: claude-sonnet-4-6
  systemPrompt:
    platform:
      waiver: {remove: true}
  ---
  Review the diff for correctness and style.

The body after the front matter becomes spec.prompt, byte for byte; the
front matter keys become the Persona's: name (metadata.name) and any field
of a Persona's spec (description, model, harness, reasoningEffort,
streaming, inherit, layers, systemPrompt, vars, context, variants) exactly
as a Persona writes it. This covers Murmur personas (name, model,
systemPrompt) and Aura prompts (name, description, inherit). Any other key
is an error: nothing is dropped silently.

Names become valid Persona names: lower-cased, every run of characters other
than a-z, 0-9 and - replaced by -, prefixed with p- when they do not start
with a letter, at most 63 characters. The same applies to inherit entries, so
Aura's inherit: [Base] refers to the Persona base. Without a name the file's
name is used. A file without front matter is all body.

Each Persona is checked as the admission webhook would check it.`,
		Example: `  # Import Murmur personas into a GitOps directory
  kubectl persona import personas/*.md > deploy/personas.yaml

  # Into a namespace
  kubectl persona import -n agents prompts/system/base.md prompts/system/agentic.md`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("give at least one Markdown file to import")
			}
			ns := ""
			if cmd.Flags().Changed("namespace") {
				ns = o.namespace
			}
			return runImport(s, args, ns)
		},
	}
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "set metadata.namespace of the Personas to `NAMESPACE` (by default they have none)")
	return cmd
}

// imported is one converted file.
type imported struct {
	file string
	name string
	doc  []byte
}

func runImport(s *Streams, files []string, namespace string) error {
	var out []imported
	var errs []string
	stdin := false
	for _, file := range files {
		if file == manifest.Stdin {
			if stdin {
				return usageError("standard input (-) is given more than once")
			}
			stdin = true
		}
		raw, name, err := readInput(file, s.In)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		im, fileErrs, notes := importFile(name, raw, namespace)
		for _, n := range notes {
			fmt.Fprintf(s.Err, "note: %s: %s\n", name, n)
		}
		for _, e := range fileErrs {
			errs = append(errs, oneLine(name+": "+e))
		}
		if len(fileErrs) == 0 {
			im.file = name
			out = append(out, *im)
		}
	}
	seen := map[string]string{}
	for _, im := range out {
		if first, dup := seen[im.name]; dup {
			errs = append(errs, fmt.Sprintf("%s: the Persona name %q is also the name of %s", im.file, im.name, first))
		}
		seen[im.name] = im.file
	}
	if len(errs) > 0 {
		return failed("%s", strings.Join(errs, "\n"))
	}
	for _, im := range out {
		fmt.Fprintf(s.Out, "---\n# Source: %s\n", oneLine(im.file))
		_, _ = s.Out.Write(im.doc)
	}
	return nil
}

// frontMatterName is the front matter key that names the persona.
const frontMatterName = "name"

// specKeys are the keys of a Persona's spec that front matter may set: all
// but prompt, which is the body.
var specKeys = func() []string {
	var keys []string
	t := reflect.TypeFor[v1alpha1.PersonaSpec]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && name != "prompt" {
			keys = append(keys, name)
		}
	}
	return keys
}()

// importFile converts one Markdown file. It returns the problems of the file
// (each prefixed with the field it is about, without the file name) and
// notes worth telling the user.
func importFile(file string, raw []byte, namespace string) (im *imported, errs, notes []string) {
	fm, body, err := readFrontMatter(raw)
	if err != nil {
		return nil, []string{err.Error()}, nil
	}
	spec, rawName, errs := specFromFrontMatter(fm)
	name, nameErrs, notes := personaNameOf(file, rawName, len(errs) > 0)
	errs = append(errs, nameErrs...)
	errs = append(errs, convertInherit(spec)...)
	if len(errs) > 0 {
		return nil, errs, notes
	}
	if len(body) > 0 {
		spec["prompt"] = string(body)
		if bytes.Contains(body, []byte("{{")) {
			notes = append(notes, "the body contains {{; "+admission.PromptLiteralNote)
		}
	}
	doc, errs := personaDocument(name, namespace, spec)
	if len(errs) > 0 {
		return nil, errs, notes
	}
	return &imported{name: name, doc: doc}, nil, notes
}

// readFrontMatter splits a Markdown file into its decoded front matter and body.
func readFrontMatter(raw []byte) (map[string]any, []byte, error) {
	if !utf8.Valid(raw) {
		return nil, nil, errors.New("the file is not valid UTF-8 text")
	}
	front, body, err := splitFrontMatter(raw)
	if err != nil {
		return nil, nil, err
	}
	fm, err := parseFrontMatter(front)
	if err != nil {
		return nil, nil, fmt.Errorf("front matter: %w", err)
	}
	return fm, body, nil
}

// specFromFrontMatter sorts the front matter's keys into a Persona spec and
// the name, and reports the keys that are neither.
func specFromFrontMatter(fm map[string]any) (spec map[string]any, rawName any, errs []string) {
	spec = map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(fm)) {
		v := fm[k]
		switch {
		case k == frontMatterName:
			rawName = v
		case k == "prompt":
			errs = append(errs, fmt.Sprintf("%s: not a front matter key: the prompt is the Markdown body after the front matter", k))
		case slices.Contains(specKeys, k):
			if v != nil {
				spec[k] = v
			}
		default:
			errs = append(errs, fmt.Sprintf("%s: unknown front matter key: a Persona has no such field; %s",
				k, suggest.Hint(k, append([]string{frontMatterName}, specKeys...), "known keys")))
		}
	}
	return spec, rawName, errs
}

// personaNameOf is the Persona name from the front matter's name, else the
// file's base name. A name that does not convert is reported unless the
// file already has problems (failed).
func personaNameOf(file string, rawName any, failed bool) (name string, errs, notes []string) {
	source := baseName(file)
	if rawName != nil {
		str, ok := rawName.(string)
		if !ok {
			errs = append(errs, fmt.Sprintf("name: must be a string, not %v", rawName))
		}
		source = str
	} else if file == manifest.StdinName {
		errs = append(errs, "name: standard input has no file name; set name in the front matter")
	}
	name, err := personaName(source)
	if err != nil && !failed && len(errs) == 0 {
		errs = append(errs, "name: "+err.Error())
	}
	if name != "" && name != source {
		notes = append(notes, fmt.Sprintf("name %q becomes the Persona name %q", source, name))
	}
	return name, errs, notes
}

// convertInherit turns the parents' names in spec.inherit into Persona names.
func convertInherit(spec map[string]any) (errs []string) {
	list, ok := spec["inherit"].([]any)
	if !ok {
		return nil
	}
	converted := make([]any, len(list))
	for i, e := range list {
		converted[i] = e
		if parent, ok := e.(string); ok {
			if n, err := personaName(parent); err != nil {
				errs = append(errs, fmt.Sprintf("inherit[%d]: %v", i, err))
			} else {
				converted[i] = n
			}
		}
	}
	spec["inherit"] = converted
	return errs
}

// personaDocument is the Persona manifest of name and spec, once it passes
// admission; its problems are named by front matter key.
func personaDocument(name, namespace string, spec map[string]any) (doc []byte, errs []string) {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	obj := map[string]any{
		"apiVersion": manifest.APIVersion,
		"kind":       v1alpha1.PersonaKind,
		"metadata":   meta,
		"spec":       spec,
	}
	if fieldErrs := admission.Validate(obj); len(fieldErrs) > 0 {
		for _, e := range fieldErrs {
			errs = append(errs, frontMatterField(e.Field)+": "+e.ErrorBody())
		}
		return nil, errs
	}
	doc, err := marshalPersona(obj)
	if err != nil {
		return nil, []string{err.Error()}
	}
	return doc, nil
}

// parseFrontMatter decodes front matter as kubectl decodes YAML; a repeated
// key is an error.
func parseFrontMatter(front []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(front)) == 0 {
		return map[string]any{}, nil
	}
	j, err := yaml.YAMLToJSONStrict(front)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %s", manifest.CleanYAMLError(err))
	}
	var v any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &v); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	}
	return nil, fmt.Errorf("must be a YAML mapping of keys to values")
}

// frontMatterField names a Persona field as the front matter writes it:
// spec.model is model, metadata.name is name, spec.prompt is the body.
func frontMatterField(path string) string {
	switch {
	case path == field.NewPath("metadata", "name").String():
		return frontMatterName
	case path == "spec.prompt":
		return "body"
	case strings.HasPrefix(path, "spec."):
		return strings.TrimPrefix(path, "spec.")
	case strings.HasPrefix(path, "spec["):
		return strings.TrimPrefix(path, "spec")
	case path == "spec":
		return "front matter"
	}
	return path
}
