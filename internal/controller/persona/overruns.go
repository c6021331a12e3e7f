package persona

import (
	"crypto/sha256"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/persona-operator/persona-operator/internal/render"
)

// A render that runs out of wall time is retried by itself, since an
// overloaded machine can cause it; after maxOverruns in a row on the same
// generation and inputs the Persona is stalled (personas.md#conditions).
const (
	maxOverruns = 3
	// overrunRetry is the first retry's delay; each next one doubles.
	overrunRetry = 10 * time.Second
)

// overruns counts, per Persona, its renders in a row that ran out of wall time.
type overruns struct {
	mu   sync.Mutex
	last map[types.NamespacedName]overrun
}

type overrun struct {
	generation int64
	inputsHash [sha256.Size]byte
	count      int
}

func newOverruns() *overruns { return &overruns{last: map[types.NamespacedName]overrun{}} }

// add counts one more overrun of persona at generation with the inputs b,
// and returns when to try again, or 0 when it is not retried any more.
func (o *overruns) add(persona types.NamespacedName, generation int64, b *render.Bundle) time.Duration {
	raw, _ := render.MarshalBundle(b) // a bundle that just rendered marshals
	next := overrun{generation: generation, inputsHash: sha256.Sum256(raw), count: 1}
	o.mu.Lock()
	defer o.mu.Unlock()
	if last, ok := o.last[persona]; ok && last.generation == next.generation && last.inputsHash == next.inputsHash {
		next.count = last.count + 1
	}
	o.last[persona] = next
	if next.count >= maxOverruns {
		return 0
	}
	return overrunRetry << (next.count - 1)
}

// reset forgets persona's overruns: its last render did not run out of time.
func (o *overruns) reset(persona types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.last, persona)
}

// forgetPersona forgets persona's overruns.
func (o *overruns) forgetPersona(persona types.NamespacedName) { o.reset(persona) }

// DefaultGuardrailDeadline is how long new ClusterPromptLayers wait for a
// render in time of a Persona whose renders run out of wall time before
// they are delivered alone (--guardrail-deadline).
const DefaultGuardrailDeadline = 2 * time.Minute

// guardrailsWaiting holds, per Persona whose renders run out of wall time,
// since when ClusterPromptLayers its ConfigMap does not hold have waited: a
// render out of time is retried rather than fall back
// (clusterpromptlayers.md#kept-through-failures), but no longer than the
// guardrail deadline. The wait is the Persona's, whatever the set of
// ClusterPromptLayers wanted: a tenant who relabels its Persona in and out
// of a personaSelector changes that set at will, and must not start the wait
// again. It ends only when the ConfigMap holds the ClusterPromptLayers that
// select the Persona. The Persona's GuardrailsWaiting condition keeps its
// start across restarts of the manager; this holds it between the status
// writes.
type guardrailsWaiting struct {
	mu    sync.Mutex
	since map[types.NamespacedName]time.Time
}

func newGuardrailsWaiting() *guardrailsWaiting {
	return &guardrailsWaiting{since: map[types.NamespacedName]time.Time{}}
}

// begin is since when persona's guardrails have waited at now: the earliest
// of what is held, the start its status recorded (zero: none) and now.
func (g *guardrailsWaiting) begin(persona types.NamespacedName, recorded, now time.Time) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	since, ok := g.since[persona]
	if !ok || since.After(now) {
		since = now
	}
	if !recorded.IsZero() && recorded.Before(since) {
		since = recorded
	}
	g.since[persona] = since
	return since
}

// forgetPersona forgets persona's wait: its ConfigMap holds the
// ClusterPromptLayers that select it, or it is gone.
func (g *guardrailsWaiting) forgetPersona(persona types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.since, persona)
}
