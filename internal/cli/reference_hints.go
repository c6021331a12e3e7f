package cli

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/suggest"
)

// missingProblem is the problem of a missing reference, with a did-you-mean
// from the manifests: the object of its kind and namespace whose name is
// closest, a ConfigMap that kustomize's configMapGenerator renamed, or the
// closest key of a ConfigMap that exists.
func missingProblem(set *manifest.Set, ns string, ref resolve.Reference) string {
	msg := ref.Problem()
	if ref.Unlabelled {
		return msg
	}
	if ref.Key != "" {
		if cm := set.Find(v1alpha1.ConfigMapKind, ns, ref.Name); cm != nil {
			return msg + keyHint(cm, ref.Key)
		}
	}
	var names []string
	for _, o := range set.Sorted(ref.Kind) {
		if o.Namespace == ns {
			names = append(names, o.Name)
		}
	}
	if ref.Kind == v1alpha1.ConfigMapKind {
		if generated := generatedName(ref.Name, names); generated != "" {
			return msg + fmt.Sprintf("; did you mean %q? kustomize's configMapGenerator adds a hash of the content to the name "+
				"and rewrites only the references it knows: teach it templateFrom with a nameReference configuration "+
				"(docs/cli.md#kustomize), or set generatorOptions.disableNameSuffixHash", generated)
		}
	}
	if s := suggest.Closest(ref.Name, names); s != "" {
		return msg + fmt.Sprintf("; did you mean %q?", s)
	}
	return msg
}

// generatedName is the name among names that kustomize generated from name:
// name, a dash and the 10 characters of the content hash.
func generatedName(name string, names []string) string {
	re := regexp.MustCompile("^" + regexp.QuoteMeta(name) + "-[a-z0-9]{10}$")
	for _, n := range names {
		if re.MatchString(n) {
			return n
		}
	}
	return ""
}

// keyHint is a did-you-mean for a key missing from a ConfigMap, or the keys
// it has.
func keyHint(o *manifest.Object, key string) string {
	var cm corev1.ConfigMap
	if o.Decode(&cm) != nil {
		return ""
	}
	keys := slices.Sorted(maps.Keys(cm.Data))
	if len(keys) == 0 {
		return "; the ConfigMap has no data"
	}
	if s := suggest.Closest(key, keys); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return "; its keys: " + strings.Join(keys, ", ")
}

// resolveFailure is the message of a failed resolve, with the did-you-means
// of missingProblem for the missing references.
func resolveFailure(set *manifest.Set, ns string, err error) string {
	var nf *resolve.NotFoundError
	var invalid *manifest.InvalidError
	switch {
	case errors.As(err, &nf):
		msgs := make([]string, len(nf.Missing))
		for i, ref := range nf.Missing {
			msgs[i] = missingProblem(set, ns, ref)
		}
		return strings.Join(msgs, "; ")
	case errors.As(err, &invalid):
		return invalidReference(invalid.Object)
	}
	return err.Error()
}
