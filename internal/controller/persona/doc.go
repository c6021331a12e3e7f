// Package persona is the Persona controller: it resolves each Persona,
// renders it (internal/render), delivers the render into its ConfigMap
// persona-<name>, numbers each delivered content as a revision, honours a
// pin, and reports all of it in the status (personas.md#composition,
// #delivery, #revisions, #pinning and #conditions). Setup registers it.
//
// It may import the revision store (internal/controller/revisions), the
// plumbing (internal/controller/kube) and the pure packages of internal/;
// only the composition root imports it.
//
// # Files
//
// controller.go holds the reconciler and its Reconcile, which calls the
// steps of the files named after them:
//
//   - Where a Persona is rendered: resolve.go reads what its spec names
//     (inputs.go logs what it read), render.go renders it, through the
//     gate of render_gate.go (one slot per CPU, fairly between
//     namespaces) and retrying a render out of time (overruns.go), and
//     deliver.go writes it into its ConfigMap (configmap.go reads what the
//     ConfigMap holds; the write is kube.ConfigMapWriter's). A failed
//     render keeps the guardrails (guardrails_kept.go), an orphaned
//     ConfigMap is adopted, and nothing is written for a deleted Persona
//     whose ConfigMap is gone (adopt.go), and nothing is delivered from
//     caches behind the API server (caches_behind.go).
//   - Where its revisions are numbered: revision_numbering.go numbers a
//     delivery's content and writes its revision.json (the inputs inputs.go
//     logs, and the one that changed, found against the inputs
//     recorded_inputs.go keeps of the last one); snapshots.go has the
//     revision store keep each delivered revision's snapshot, after the
//     delivery and before the status, and prune those past the limit once
//     the status names the new one, off the workers (background_prunes.go).
//     pin.go delivers a pinned revision from
//     its snapshot (personas.md#pinning).
//   - Where its status is written: status.go sets it from the outcome, and
//     kube.PatchStatus patches it, once, in the defer of Reconcile, with
//     the RolloutHalted condition the restarts decide (rollout_halts.go).
//   - Where a dependent is found: dependents.go walks the field indexes
//     (kube) from a changed object to the Personas it re-renders,
//     dependents_selected.go finds those a ClusterPromptLayer or a
//     Namespace's labels select, platform_fanout.go those a PromptPlatform
//     change concerns, and propagation.go enqueues them on a change and
//     tells the changed object (the Propagated Event). initial_list.go
//     queues first the Personas edited while no manager ran.
//
// The steps are tested each on its own against controller-runtime's fake
// client (fake_test.go builds the reconciler and its revision store over
// it), with plain go test; test/integration/controllers runs the manager
// against a real API server (envtest) for what the API server owns.
//
// # Two passes
//
// A reconcile delivers first and reports after. Its delivery pass resolves
// and renders the Persona and writes the ConfigMap when the render
// changed. When the change is the Persona's own (its first render, a new
// generation, a recovery), the same reconcile patches its status. When it
// is another object's change fanning out to many Personas, the status is
// deferred: the reconcile records the render (deferred_status.go) and
// requeues the Persona after a delay at low priority, behind the
// deliveries of every dependent. That status pass resolves again and, when
// it read the same inputs (inputs.go) and the ConfigMap still holds the
// render, reports it without rendering again.
//
// # Stores
//
// The controller holds what it knows between reconciles in stores its
// constructor, newReconciler, makes; forget drops a deleted Persona from
// each (personaStore):
//
//   - own_writes.go: the content hash each Persona's ConfigMap holds at the
//     version the controller last wrote or read. The caches hold ConfigMaps
//     by metadata only, so this is how a delivery knows the data is current
//     without reading it, and how the watch event of its own write goes by
//     without a render.
//   - deferred_status.go: the render and inputs of a fan-out's delivery
//     whose status waits for its pass, and the data it wrote, packed
//     (packed_data.go), for the pass to write the snapshot from.
//   - awaiting.go: the references each Persona's last render found
//     missing, so that an object's arrival finds the Personas waiting for
//     it before their status reaches the cache.
//   - overruns.go: each Persona's renders in a row out of wall time alone,
//     retried by themselves until the Persona is stalled; and since when
//     new guardrails wait for a render in time (--guardrail-deadline).
//   - rollout_halts.go: the RolloutHalted conditions the restarts decide.
//
// The snapshots, keyed by snapshot and by namespace rather than by
// Persona, are the revision store's (internal/controller/revisions).
package persona
