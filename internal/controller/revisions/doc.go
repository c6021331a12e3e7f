// Package revisions is the store of the Personas' revisions
// (personas.md#revisions): each revision a Persona delivers is kept as an
// immutable ConfigMap, persona-<name>.r<n>, its snapshot. The Store writes
// a revision's snapshot, holds each namespace's snapshots under the byte cap
// (--snapshot-bytes-per-namespace, a ledger kept from the events of the
// cache of the snapshots, kube.SnapshotCache, evicting the oldest no
// Persona keeps), and prunes a Persona's
// snapshots past its spec.revisionHistoryLimit once its status names the
// new revision, less those its pods name from a fresh list that the
// namespace's waiting prunes share (fresh_pods.go). Retention decides
// which snapshots stay whatever the limit and the cap say: the current,
// latest and pinned revisions, and those the Keepers name (the revisions
// injected pods name).
//
// How revisions are numbered, and what a pin delivers, are the Persona
// controller's (internal/controller/persona), which calls the Store. It may
// import kube (under internal/controller) and the pure packages of
// internal/, never the Persona controller.
package revisions
