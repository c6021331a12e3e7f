package render

import (
	"embed"
	"strings"
)

// Catalog is the platform sections in render order (personas.md#platform-sections).
var Catalog = []string{
	"persona", "workspace", "gitPush", "branchCreated", "commitSigning", "ghGateway",
	"gitWrapper", "forkPr", "prDashboardLink", "prMergeability", "waiver", "structuredOutput",
	"opencodeStructuredOutput", "knowledge", "eventDelivery", "completion", "expectedOutput",
	"tasks", "autonomousTurn",
}

//go:embed defaults/*.tmpl defaults/unstructured/*.tmpl
var defaultFiles embed.FS

// defaultTemplates are the operator's own templates for the platform
// sections, each appearing exactly when personas.md#platform-sections says.
var defaultTemplates = func() map[string]string {
	m := make(map[string]string, len(Catalog))
	for _, key := range Catalog {
		raw, err := defaultFiles.ReadFile("defaults/" + key + ".tmpl")
		if err != nil {
			panic("no default template for platform section " + key)
		}
		m[key] = strings.TrimSuffix(string(raw), "\n")
	}
	return m
}()

// unstructuredTemplates are the shipped templates, for a prompt without the
// structuredOutput section, of the sections whose shipped text speaks of the
// structured output: they would otherwise ask for an output the prompt never
// describes. opencodeStructuredOutput's is empty: it vanishes.
var unstructuredTemplates = func() map[string]string {
	m := map[string]string{}
	for _, key := range []string{"completion", "expectedOutput", "opencodeStructuredOutput"} {
		raw, err := defaultFiles.ReadFile("defaults/unstructured/" + key + ".tmpl")
		if err != nil {
			panic("no template without structured output for platform section " + key)
		}
		m[key] = strings.TrimSuffix(string(raw), "\n")
	}
	return m
}()

// IsPlatformKey reports whether key is a platform section of the catalog.
func IsPlatformKey(key string) bool {
	_, ok := defaultTemplates[key]
	return ok
}

// OriginDefault is the origin of a section rendered from the shipped template.
const OriginDefault = "default"

// DefaultSections are the platform sections as shipped, in render order.
func DefaultSections() []Section {
	out := make([]Section, len(Catalog))
	for i, key := range Catalog {
		out[i] = Section{Key: key, Origin: OriginDefault, Template: defaultTemplates[key]}
	}
	return out
}
