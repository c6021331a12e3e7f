// Command scale measures persona-operator at scale on a local control plane
// (envtest's kube-apiserver and etcd) with the manager binary, and prints one
// table: convergence of N Personas, fan-out of a shared PromptLayer edit,
// of a ClusterPromptLayer edit, of a parent Persona edit and of the
// PromptPlatform's create, edit and delete, API writes in a steady state,
// restarts of the manager, the webhook's added create latency, and the
// manager's memory and render times, each beside a floor measured in the
// same run. Run it with `make scale` (SCALE_FLAGS="-n 500 ..."). With
// -curve it measures at several N and adds how time and memory per Persona
// grow with N (`make scale-curve`); with -json it also writes the figures
// as JSON, to compare versions. It is a measurement: it exits 0 when
// targets are missed, non-zero on errors.
//
// The files are grouped by what they do, by the prefix of their names:
//
//   - main.go, run.go: the flags, and the run at each N;
//   - harness*.go: what the rounds share: the control plane, the manager
//     process, the harness's client, the processes' CPU and the profiles;
//   - world*.go: the objects of a measured namespace, and their render
//     offline with the controller's own resolver and renderer, which the
//     phases wait for and the floors write;
//   - floor*.go: the floors, what a bare client writes with the manager
//     stopped, and their brackets (measured before the phases and after
//     them, interpolated to each phase's moment); and the bare fan-out
//     floor measured beside each fan-out, seconds before and after it,
//     with the manager up and idle (floor_adjacent.go);
//   - phase*.go: the round and its phases with the manager running
//     (convergence, the fan-outs, the steady state, the restarts, the
//     webhook), the watches that time them, what each phase cost, and
//     roundResult, what a round measured;
//   - report*.go: the figures over the rounds (medians, ratios to the
//     floors, targets) as the Markdown tables and as the -json output;
//   - *_bench_test.go: what single requests the controller makes cost the
//     API server (a status patch by its history's length, a prune's
//     fresh list of pods), with go test -bench and the envtest binaries.
package main
