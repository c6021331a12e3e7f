// Package layers holds the reconcilers of the kinds a Persona is composed
// from, each of which only reports whether it is usable: the PromptLayer
// (its template parses, its templateFrom resolves), the ClusterPromptLayer
// and the PromptPlatform (checked as admission checks them, since they may
// have been stored without the webhook). None renders or delivers: a
// change to them reaches the Personas through the Persona controller's
// watches.
//
// It may import kube (under internal/controller) and the pure packages of
// internal/, and is imported only by the composition root.
package layers
