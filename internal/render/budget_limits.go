package render

import (
	"time"
)

// Limits bound every render (personas.md#limits). A render is one persona and variant.
type Limits struct {
	// MaxSourceBytes bounds one template's source.
	MaxSourceBytes int
	// MaxDuration bounds a render's wall time.
	MaxDuration time.Duration
	// MaxPersonaDuration bounds the wall time of a persona's prompt and all
	// its variants together, the renders of one reconcile (ConfigMap).
	MaxPersonaDuration time.Duration
	// MaxUnits bounds a render's loop iterations, template calls and list
	// elements together.
	MaxUnits int
	// MaxOutputBytes bounds the bytes a render produces, and any one string
	// a template function returns.
	MaxOutputBytes int
	// MaxIncludeDepth bounds the nesting of include.
	MaxIncludeDepth int
	// MaxCallDepth bounds the nesting of template calls, so that recursion
	// cannot exhaust the stack before the unit budget runs out.
	MaxCallDepth int
	// MaxValueDepth bounds the nesting of values built by template functions.
	MaxValueDepth int
	// MaxConfigMapBytes bounds the ConfigMap data: every key and value together.
	MaxConfigMapBytes int
}

// DefaultLimits are the limits of personas.md#limits.
var DefaultLimits = Limits{
	MaxSourceBytes:     64 << 10,
	MaxDuration:        250 * time.Millisecond,
	MaxPersonaDuration: time.Second,
	MaxUnits:           100_000,
	MaxOutputBytes:     900 << 10,
	MaxIncludeDepth:    8,
	MaxCallDepth:       1000,
	MaxValueDepth:      100,
	MaxConfigMapBytes:  900 << 10,
}
