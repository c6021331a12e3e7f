// Package restarts restarts the workloads that opt in onto each revision
// their Persona delivers (--restart-workloads): a controller of one worker
// over the opted-in Deployments, StatefulSets, DaemonSets and (when Argo
// Rollouts is installed at start) Rollouts, and the Personas' delivered
// revisions, which admits the restarts in the waves of
// internal/waves and writes them by server-side apply; and the checks that
// tell of a restart label on another kind, or of workloads that opt in
// while restarts are off.
//
// A failed rollout halts the restarts of its cause: the restarts decide a
// Persona's RolloutHalted condition and hand it to the Persona controller
// (Halts), which writes it with the rest of the status.
//
// It may import kube (under internal/controller) and the pure packages of
// internal/, and is imported only by the composition root.
package restarts
