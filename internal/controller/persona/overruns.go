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
// the identity of the ClusterPromptLayers its ConfigMap does not hold yet
// and since when they wait: a render out of time is retried rather than
// fall back (clusterpromptlayers.md#kept-through-failures), but no longer
// than the guardrail deadline.
type guardrailsWaiting struct {
	mu    sync.Mutex
	since map[types.NamespacedName]waitingGuardrails
}

type waitingGuardrails struct {
	identity string
	since    time.Time
}

func newGuardrailsWaiting() *guardrailsWaiting {
	return &guardrailsWaiting{since: map[types.NamespacedName]waitingGuardrails{}}
}

// left is how long the guardrails of identity may still wait for persona's
// render at now, deadline after they were first found waiting; 0 when the
// deadline has passed.
func (g *guardrailsWaiting) left(persona types.NamespacedName, identity string, now time.Time, deadline time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	w, ok := g.since[persona]
	if !ok || w.identity != identity {
		w = waitingGuardrails{identity: identity, since: now}
		g.since[persona] = w
	}
	return max(0, w.since.Add(deadline).Sub(now))
}

// forgetPersona forgets what persona's ConfigMap waited for: it rendered.
func (g *guardrailsWaiting) forgetPersona(persona types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.since, persona)
}
