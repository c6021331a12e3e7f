// Package render composes and renders a persona's system prompt (personas.md#templates, #composition, #delivery and #limits).
//
// It is a pure library: its input is a Bundle of resolved, unrendered inputs
// (bundle.json is a Bundle serialized) and its output is the ConfigMap data the
// operator writes. It has no Kubernetes client and does no I/O, so the
// controller, the admission webhook and kubectl-persona all render the same way.
//
// Templates are untrusted: every render runs under a budget of wall time,
// loop iterations, template calls, list elements and output bytes (Limits).
package render
