// Package controller is the composition root of the controllers: Setup
// makes the caches they share (caches.go: the metadata caches of the
// operator's ConfigMaps, of the template sources and of the agent pods, the
// cache of the snapshots,
// each informer asked for before the manager starts and its first list read
// in pages, informers_at_start.go, and synced without polling,
// caches_sync.go), registers the field indexes,
// and wires the controllers of the packages below with what each reads and
// writes through. CacheOptions, ClientOptions, NewCache and ListAtStart are
// the manager's own options, and the defaults of Options are the flags'.
//
// # Packages
//
// Imports run one way, from the root down (test/deps_test.go checks it):
//
//	controller                     the composition root (this package)
//	├── persona                    the Persona controller: resolve, render, deliver,
//	│                              revision numbering, pins, status, dependents
//	├── revisions                  the revision store: snapshots, the byte cap's
//	│                              ledger and eviction, retention, pruning
//	├── restarts                   the workload restarts on a new revision
//	├── agents                     status.agents, from the agent pods' cache
//	├── layers                     the PromptLayer, ClusterPromptLayer and
//	│                              PromptPlatform reconcilers (validity only)
//	└── kube                       the plumbing to the API server every one of
//	                               them uses: template source reader, lookup,
//	                               field indexes, status patch, Event recorder,
//	                               ConfigMap writer, interned metadata, the
//	                               cache of the snapshots
//
// persona calls revisions through a small interface (RevisionStore), and
// restarts hands its RolloutHalted decisions to persona through one of its
// own (restarts.Halts), which the root wires: no two controller packages
// import each other, and kube imports none of them. Each package's doc.go
// says what it owns.
//
// The white-box tests sit beside their code; the specs that run the manager
// binary against a real API server are in test/integration/controllers.
package controller
