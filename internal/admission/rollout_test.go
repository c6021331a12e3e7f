package admission

import (
	"strings"
	"testing"
)

// rollout is a Persona whose spec.rollout.steps are steps (YAML flow items).
func rollout(steps ...string) string {
	return persona("  rollout:\n    steps:\n" + "      - " + strings.Join(steps, "\n      - ") + "\n")
}

func TestRolloutAccepted(t *testing.T) {
	runCases(t, []testCase{
		{name: "the example of personas.md", doc: rollout("{setWeight: 10}", "{pause: {duration: 30m}}",
			"{analysis: {templates: [{clusterTemplateName: agent-task-success}], args: [{name: threshold, value: '0.9'}]}}", "{setWeight: 50}")},
		{name: "a pause without a duration", doc: rollout("{setWeight: 0}", "{pause: {}}", "{setWeight: 100}")},
		{name: "a duration in whole seconds", doc: rollout("{pause: {duration: 90}}")},
		{name: "a duration of a week", doc: rollout("{pause: {duration: 168h}}")},
		{name: "twenty steps", doc: persona("  rollout:" + yamlList("\n    steps:", 20, func(int) string { return "{setWeight: 5}" }))},
	}, ValidatePersona)
}

func TestRolloutRejected(t *testing.T) {
	const steps = "spec.rollout.steps"
	runCases(t, []testCase{
		{name: "no steps", doc: persona("  rollout: {steps: []}\n"), want: []want{required(steps)}},
		{name: "twenty-one steps", doc: persona("  rollout:" + yamlList("\n    steps:", 21, func(int) string { return "{setWeight: 5}" })),
			want: []want{tooMany(steps)}},
		{name: "a weight over 100", doc: rollout("{setWeight: 101}"), want: []want{invalid(steps + "[0].setWeight")},
			hints: map[string]string{steps + "[0].setWeight": "between 0 and 100"}},
		{name: "a negative weight", doc: rollout("{setWeight: -1}"), want: []want{invalid(steps + "[0].setWeight")}},
		{name: "two kinds in one step", doc: rollout("{setWeight: 10, pause: {}}"), want: []want{invalid(steps + "[0]")},
			hints: map[string]string{steps + "[0]": "sets 2 of setWeight, pause and analysis"}},
		{name: "an empty step", doc: rollout("{}"), want: []want{invalid(steps + "[0]")}},
		{name: "a duration in days", doc: rollout("{pause: {duration: 1d}}"), want: []want{invalid(steps + "[0].pause.duration")},
			hints: map[string]string{steps + "[0].pause.duration": `"1d" is not a whole number of seconds, or a whole number and a unit, s, m or h`}},
		{name: "a duration over a week", doc: rollout("{pause: {duration: 169h}}"), want: []want{invalid(steps + "[0].pause.duration")}},
		{name: "a negative duration", doc: rollout("{pause: {duration: -5}}"), want: []want{invalid(steps + "[0].pause.duration")}},
		{name: "a duration that is a list", doc: rollout("{pause: {duration: [1]}}"), want: []want{invalid("spec.rollout")}},
		{name: "an analysis without templates", doc: rollout("{analysis: {templates: []}}"), want: []want{required(steps + "[0].analysis.templates")}},
		{name: "a template without a name", doc: rollout("{analysis: {templates: [{clusterTemplateName: ''}]}}"),
			want: []want{required(steps + "[0].analysis.templates[0].clusterTemplateName")}},
		{name: "a template name that is no name", doc: rollout("{analysis: {templates: [{clusterTemplateName: Bad_Name}]}}"),
			want: []want{invalid(steps + "[0].analysis.templates[0].clusterTemplateName")}},
		{name: "an arg the operator sets", doc: rollout("{analysis: {templates: [{clusterTemplateName: t}], args: [{name: canary-revision, value: '1'}]}}"),
			want:  []want{forbidden(steps + "[0].analysis.args[0].name")},
			hints: map[string]string{steps + "[0].analysis.args[0].name": `"canary-revision" is set by the operator`}},
		{name: "an arg twice", doc: rollout("{analysis: {templates: [{clusterTemplateName: t}], args: [{name: a, value: '1'}, {name: a, value: '2'}]}}"),
			want: []want{duplicate(steps + "[0].analysis.args[1].name")}},
		{name: "a misspelled step", doc: rollout("{setWieght: 10}"), want: []want{invalid(steps + "[0].setWieght")},
			hints: map[string]string{steps + "[0].setWieght": `did you mean "setWeight"?`}},
	}, ValidatePersona)
}
