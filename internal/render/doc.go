// Package render composes and renders a persona's system prompt (personas.md#templates, #composition, #delivery and #limits).
//
// It is a pure library: its input is a Bundle of resolved, unrendered inputs
// (bundle.json is a Bundle serialized) and its output is the ConfigMap data the
// operator writes. It has no Kubernetes client and does no I/O, so the
// controller, the admission webhook and kubectl-persona all render the same way.
//
// Templates are untrusted: every render runs under a budget of wall time,
// loop iterations, template calls, list elements and output bytes (Limits).
//
// # Files
//
// The way in is the Engine: ConfigMap renders every key the operator writes,
// Render one system prompt, Check what admission checks of a template.
//
// Inputs and outputs:
//   - bundle.go: Bundle, the resolved inputs; Turn overrides; bundle.json
//     (MarshalBundle, UnmarshalBundle).
//   - data.go: Data, the template variables of one render, and ModelFamily.
//   - catalog.go: the platform sections and their shipped templates (defaults/).
//   - configmap.go: Engine.ConfigMap, the ConfigMap keys, Output, ContentHash.
//   - errors.go: every error type and the wording of every limit error.
//
// Rendering:
//   - render.go: Engine, and Render as steps: variant, platform sections,
//     extensions, layers, caller prompts.
//   - compose.go: normalizing and joining pieces (Normalize, Join, spans).
//   - layers.go: layer sources, ranks and modes.
//   - parse.go: parsing a template source and checking its calls and includes.
//   - parse_cache.go: the cache of parsed sources, in two generations.
//   - check.go: Engine.Check, the field chains of a template against Data.
//   - executor.go: executing parsed templates, include, the executor pool.
//   - funcs.go: the functions a template may call.
//
// The budget (personas.md#limits):
//   - budget_limits.go: Limits and DefaultLimits.
//   - budget_meter.go: budget, the running account of one render.
//   - budget_checkpoints.go: the checkpoints parsing inserts into range
//     bodies and called templates, and the writer that accounts for them and
//     for every output byte.
//   - budget_guard.go: the guard around template functions.
//   - budget_costs.go: what a costly function costs, known before it runs.
//   - budget_values.go: the bounds on values that functions take and return.
package render
