package render

import "github.com/persona-operator/persona-operator/internal/suggest"

// variantHint is a did-you-mean for a variant the persona does not have, or
// the variants it has.
func variantHint(b *Bundle, variant string) string {
	if len(b.Variants) == 0 {
		return "it has no variants"
	}
	names := make([]string, len(b.Variants))
	for i, v := range b.Variants {
		names[i] = v.Name
	}
	return suggest.Hint(variant, names, "its variants")
}
