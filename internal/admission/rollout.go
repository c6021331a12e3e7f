package admission

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/release"
)

// Limits of spec.rollout's analysis steps, as the CRD has them.
const (
	maxAnalysisTemplates = 5
	maxAnalysisArgs      = 20
	maxAnalysisArgBytes  = 4096
)

// argNameRE is an analysis arg's name: what an Argo Rollouts template
// refers to as {{args.NAME}}.
var argNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)

// validateRollout checks spec.rollout (personas.md#prompt-releases): one
// to MaxRolloutSteps steps, each setting exactly one of setWeight, pause
// and analysis; weights of 0 to 100; pause durations that read; analysis
// steps naming their ClusterAnalysisTemplates, with args named once each
// and never one the operator sets. shapeFailed is set when the strict walk
// found the rollout's shape wrong, which it has reported.
func validateRollout(p *field.Path, spec map[string]any, shapeFailed bool) field.ErrorList {
	raw, ok := lookup(spec, "rollout")
	if !ok || raw == nil || shapeFailed {
		return nil
	}
	var r v1alpha1.Rollout
	if errs := Decode(p, raw, &r, false); len(errs) > 0 {
		// Only a value the walk cannot see inside gets here: a duration
		// that is neither a number nor a string.
		return errs
	}
	var errs field.ErrorList
	sp := p.Child("steps")
	switch n := len(r.Steps); {
	case n == 0:
		return field.ErrorList{field.Required(sp, "at least one step: setWeight, pause or analysis")}
	case n > v1alpha1.MaxRolloutSteps:
		return field.ErrorList{field.TooMany(sp, n, v1alpha1.MaxRolloutSteps)}
	}
	for i, step := range r.Steps {
		ip := sp.Index(i)
		set := 0
		if step.SetWeight != nil {
			set++
			if w := *step.SetWeight; w < 0 || w > 100 {
				errs = append(errs, field.Invalid(ip.Child("setWeight"), w, "must be between 0 and 100 (a percentage of new pods)"))
			}
		}
		if step.Pause != nil {
			set++
			if _, _, err := release.PauseDuration(step.Pause.Duration); err != nil {
				errs = append(errs, field.Invalid(ip.Child("pause", "duration"), shortValue(step.Pause.Duration.String()), err.Error()))
			}
		}
		if step.Analysis != nil {
			set++
			errs = append(errs, validateAnalysis(ip.Child("analysis"), step.Analysis)...)
		}
		if set != 1 {
			errs = append(errs, field.Invalid(ip, field.OmitValueType{}, fmt.Sprintf("sets %d of setWeight, pause and analysis; a step sets exactly one", set)))
		}
	}
	return errs
}

// validateAnalysis checks an analysis step.
func validateAnalysis(p *field.Path, a *v1alpha1.RolloutAnalysis) field.ErrorList {
	var errs field.ErrorList
	tp := p.Child("templates")
	switch n := len(a.Templates); {
	case n == 0:
		errs = append(errs, field.Required(tp, "at least one ClusterAnalysisTemplate: [{clusterTemplateName: NAME}]"))
	case n > maxAnalysisTemplates:
		errs = append(errs, field.TooMany(tp, n, maxAnalysisTemplates))
	}
	for i, t := range a.Templates {
		np := tp.Index(i).Child("clusterTemplateName")
		if t.ClusterTemplateName == "" {
			errs = append(errs, field.Required(np, "the name of a ClusterAnalysisTemplate the platform team labelled "+v1alpha1.AnalysisTemplateLabel+": \"true\""))
			continue
		}
		errs = append(errs, validateSubdomain(np, t.ClusterTemplateName)...)
	}
	ap := p.Child("args")
	if n := len(a.Args); n > maxAnalysisArgs {
		return append(errs, field.TooMany(ap, n, maxAnalysisArgs))
	}
	seen := map[string]bool{}
	for i, arg := range a.Args {
		np := ap.Index(i).Child("name")
		switch {
		case arg.Name == "":
			errs = append(errs, field.Required(np, "the name of an arg the templates declare"))
		case slices.Contains(v1alpha1.OperatorAnalysisArgs, arg.Name):
			errs = append(errs, field.Forbidden(np, fmt.Sprintf("%q is set by the operator (so are %s)", arg.Name, strings.Join(v1alpha1.OperatorAnalysisArgs, ", "))))
		case seen[arg.Name]:
			errs = append(errs, field.Duplicate(np, truncate(arg.Name)))
		default:
			errs = append(errs, checkPattern(np, arg.Name, argNameRE, "letters, digits, '-', '_' and '.'")...)
		}
		seen[arg.Name] = true
		if len(arg.Value) > maxAnalysisArgBytes {
			errs = append(errs, field.TooLong(ap.Index(i).Child("value"), nil, maxAnalysisArgBytes))
		}
	}
	return errs
}
