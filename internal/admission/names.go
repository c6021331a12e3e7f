package admission

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The name patterns of personas.md#writing-a-persona-spec, promptlayers.md#writing-a-promptlayer-spec and personas.md#extensions.
const (
	// namePattern is a Persona name, an inherit entry, a variant name and a
	// custom layer source.
	namePattern = `^[a-z][a-z0-9-]{0,62}$`
	// extensionIDPattern is an extension id.
	extensionIDPattern = `^[a-z][a-z0-9_]{0,62}$`
)

var (
	nameRE        = regexp.MustCompile(namePattern)
	extensionIDRE = regexp.MustCompile(extensionIDPattern)
)

// checkPattern reports s unless it matches re; what says what s must be.
func checkPattern(p *field.Path, s string, re *regexp.Regexp, what string) field.ErrorList {
	if re.MatchString(s) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, truncate(s), fmt.Sprintf("must match %s (%s)", re, what))}
}

const nameWhat = "a lower-case letter, then up to 62 lower-case letters, digits or '-'"

// validatePersonaName checks a Persona's metadata.name. Beyond the pattern
// of personas.md#writing-a-persona-spec it must end with a letter or digit: the API server requires
// object names to be DNS-1123 subdomains, and the name becomes the ConfigMap
// name persona-<name> and a label value, neither of which may end with '-'.
func validatePersonaName(p *field.Path, name string) field.ErrorList {
	if errs := checkPattern(p, name, nameRE, nameWhat); errs != nil {
		return errs
	}
	if strings.HasSuffix(name, "-") {
		return field.ErrorList{field.Invalid(p, name, "must end with a lower-case letter or digit: Kubernetes object names cannot end with '-'")}
	}
	return nil
}

// validateSubdomain checks a name that must be a DNS-1123 subdomain: a
// PromptLayer's or a ConfigMap's.
func validateSubdomain(p *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, truncate(name), msg))
	}
	return errs
}

// validateConfigMapKey checks a ConfigMap data key: the pattern of the CRD
// and what the API server accepts as a key (not "." or "..").
func validateConfigMapKey(p *field.Path, key string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p, truncate(key), msg))
	}
	return errs
}
