package controller

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
