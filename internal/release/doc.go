// Package release holds the rules of a Persona's prompt release
// (personas.md#prompt-releases), pure, without a client: which new pods get
// the canary revision, how long a pause step lasts, and how a canary moves
// through spec.rollout.steps given what its analysis and the promote and
// abort annotations say. The Persona controller applies its decisions; the
// webhook its choice of revision; admission its reading of the steps.
package release
