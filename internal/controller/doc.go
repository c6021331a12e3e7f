// Package controller holds the Persona, PromptLayer, ClusterPromptLayer and
// PromptPlatform reconcilers, which Setup registers with the manager with
// the field indexes and ConfigMap caches they read.
//
// # Files
//
// Files are named by kind and step: persona_*.go are the Persona
// controller's (persona_controller.go holds its Reconcile, which calls the
// steps of the files named after them), promptlayer_controller.go and
// clusterpromptlayer_controller.go the layers', promptplatform_*.go the
// PromptPlatform's (its status, and the fan-out of a change to the Personas
// whose sections it changes), and the rest is shared.
//
//   - Where a Persona is rendered: persona_resolve.go reads what its spec
//     names, persona_render.go renders it (internal/render), and
//     persona_deliver.go writes it into its ConfigMap persona-<name>
//     (persona_configmap_writer.go sends the write); a failed render keeps
//     the guardrails in persona_guardrails_kept.go, and an orphaned
//     ConfigMap is adopted in persona_adopt.go.
//   - Where its revisions are kept (personas.md#revisions): persona_revision.go
//     numbers a delivery's content and writes its revision.json (the
//     inputs persona_inputs.go logs, and the one that changed), and
//     persona_snapshot.go keeps each revision as the immutable ConfigMap
//     persona-<name>.r<n>, after the delivery and before the status, and
//     prunes those past spec.revisionHistoryLimit once the status names
//     the new one, but for those injected pods name (agents.go).
//   - Where its agents are counted (delivery.md#agents): agents.go keeps
//     status.agents, a controller of its own over a metadata-only cache of
//     the pods that carry the Persona label.
//   - Where its status is written: persona_status.go sets it from the
//     outcome, and status_patch.go patches it, once, in the defer of every
//     Reconcile (the layers' too).
//   - Where a dependent is found: indexers.go indexes what each Persona and
//     PromptLayer names or read, dependents.go walks those indexes from a
//     changed object to the Personas it re-renders, dependents_selected.go
//     finds those a ClusterPromptLayer or a Namespace's labels select, and
//     persona_propagation.go enqueues them on a change and tells the changed
//     object (the Propagated Event).
//
// Tests sit beside their files: persona_resolve_test.go,
// persona_render_test.go, persona_deliver_test.go and persona_status_test.go
// test each step on its own against controller-runtime's fake client
// (persona_fake_test.go), with plain go test; the specs of
// test/integration/controllers run the manager against a real API server
// (envtest) for what the API server owns: watches, caches, conflicts, the
// webhook in the path.
//
// # Two passes
//
// A reconcile delivers first and reports after. Its delivery pass resolves
// and renders the Persona and writes the ConfigMap when the render
// changed. When the change is the Persona's own (its first render, a new
// generation, a recovery), the same reconcile patches its status. When it
// is another object's change fanning out to many Personas, the status is
// deferred: the reconcile records the render (persona_deferred_status.go)
// and requeues the Persona after a delay at low priority, behind the
// deliveries of every dependent. That status pass resolves again and, when
// it read the same inputs (persona_inputs.go) and the ConfigMap still holds
// the render, reports it without rendering again.
//
// # Stores
//
// The Persona controller holds what it knows between reconciles in stores
// its constructor, newPersonaReconciler, makes; forget drops a deleted
// Persona from each (personaStore). Each store is the Persona controller's:
//
//   - persona_own_writes.go: the content hash each Persona's ConfigMap holds
//     at the version the controller last wrote or read. The caches hold
//     ConfigMaps by metadata only, so this is how a delivery knows the data
//     is current without reading it, and how the watch event of its own
//     write goes by without a render.
//   - persona_deferred_status.go: the render and inputs of a fan-out's
//     delivery whose status waits for its pass.
//   - persona_awaiting.go: the references each Persona's last render found
//     missing, so that an object's arrival finds the Personas waiting for
//     it before their status reaches the cache.
//   - persona_overruns.go: each Persona's renders in a row out of wall time
//     alone, retried by themselves until the Persona is stalled; and since
//     when new guardrails wait for a render in time (--guardrail-deadline).
//
// Not a store but shared by every reconcile, persona_render_gate.go admits
// the renders to one slot per CPU, fairly between namespaces
// (internal/fairshare), and retries one out of wall time alone.
//
// Keyed by snapshot rather than by Persona, persona_pruned.go holds the
// snapshots the controller pruned until their deletion is watched: that
// event needs no reconcile, while a snapshot deleted by anyone else is
// written again. Keyed by namespace, persona_snapshot_bytes.go counts what
// its snapshots hold (the byte cap) from the metadata cache's events, with
// the snapshots created and deleted that the cache has not seen yet.
//
// Shared by the Persona and PromptLayer controllers, keyed by ConfigMap
// rather than by Persona: template_source_reader.go keeps, per
// resourceVersion, the keys templateFrom reads of a template source, and
// drops a ConfigMap once it is gone. caches.go makes the two metadata
// caches of ConfigMaps (the operator's own, and the template sources),
// and caches_intern.go the transform that makes the cached objects share
// their repeated strings.
package controller
