package render

import (
	"fmt"
	"time"
)

// Limits bound every render (personas.md#limits). A render is one persona and variant.
type Limits struct {
	// MaxSourceBytes bounds one template's source.
	MaxSourceBytes int
	// MaxDuration bounds a render's wall time.
	MaxDuration time.Duration
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
	MaxSourceBytes:    64 << 10,
	MaxDuration:       250 * time.Millisecond,
	MaxUnits:          100_000,
	MaxOutputBytes:    900 << 10,
	MaxIncludeDepth:   8,
	MaxCallDepth:      1000,
	MaxValueDepth:     100,
	MaxConfigMapBytes: 900 << 10,
}

// LimitTime is the Limit of a LimitError for the wall-time budget.
const LimitTime = "time"

// LimitError reports a render that exceeded one of its limits. Its message
// names the limit.
type LimitError struct {
	// Limit names the limit: "time", "units", "output", "source", "call
	// depth" or "value depth".
	Limit string
	msg   string
}

func (e *LimitError) Error() string { return e.msg }

func limitErrorf(limit, format string, args ...any) *LimitError {
	return &LimitError{Limit: limit, msg: fmt.Sprintf(format, args...)}
}

func (l *Limits) sourceError(size int) *LimitError {
	return limitErrorf("source", "template source is %d bytes, over the limit of %d bytes", size, l.MaxSourceBytes)
}

func (l *Limits) unitsError() *LimitError {
	return limitErrorf("units", "render budget exceeded: more than the limit of %d loop iterations, template calls and list elements", l.MaxUnits)
}

func (l *Limits) durationError() *LimitError {
	return limitErrorf(LimitTime, "render budget exceeded: rendering took longer than the limit of %s", l.MaxDuration)
}

func (l *Limits) outputError(size int) *LimitError {
	return limitErrorf("output", "render budget exceeded: output of %d bytes is over the limit of %d bytes", size, l.MaxOutputBytes)
}

func (l *Limits) callDepthError() *LimitError {
	return limitErrorf("call depth", "render budget exceeded: template calls nested deeper than the limit of %d", l.MaxCallDepth)
}
