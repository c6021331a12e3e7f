// Package agents keeps each Persona's status.agents (delivery.md#agents):
// how many of its pods run each revision, counted from a metadata-only
// cache of the pods that carry the Persona label, which the composition
// root makes and shares with the retention of snapshots. Its controller
// writes status.agents alone, by a merge patch of its own, apart from the
// Persona controller's renders.
//
// It may import kube (under internal/controller) and the pure packages of
// internal/, and is imported only by the composition root.
package agents
