// Package kube is the controllers' plumbing to the API server, below every
// controller package: what they read through (the template sources'
// reader, the resolver's Lookup, the field indexes and lookups by them,
// the reader of the pods' metadata afresh, the live read of one of this
// API's objects by name, LiveMetadata), what they write with (the
// metadata-only ConfigMap writer, the status patch, the Event recorder,
// which keeps a bounded table of the Events it wrote, and the one that cuts
// notes), and the pieces the caches are made of (the metadata objects,
// interned strings and shared lists, a cache started with the manager's),
// and the cache of the snapshots, a few fields each (SnapshotCache).
//
// It holds no controller and no state of one. It may import api/ and the
// pure packages of internal/ (delivery, render, resolve, status), never a
// package under internal/controller.
package kube
