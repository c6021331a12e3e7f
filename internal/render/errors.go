package render

import (
	"errors"
	"fmt"
	"strings"
	"text/template/parse"
	"time"
)

// This file holds the package's error types, the wording of every limit
// error, and the shape of template errors.

// RenderError reports a section that does not render (personas.md#conditions RenderFailed).
type RenderError struct {
	Persona string
	Variant string // empty for the persona's own prompt
	Section string
	Err     error
}

func (e *RenderError) Error() string {
	variant := ""
	if e.Variant != "" {
		variant = "variant " + e.Variant + ": "
	}
	return fmt.Sprintf("the system prompt of persona %q does not render: %srender system prompt section %s: %v", e.Persona, variant, e.Section, e.Err)
}

func (e *RenderError) Unwrap() error { return e.Err }

// TooLargeError reports ConfigMap data over the limit (personas.md#conditions TooLarge).
type TooLargeError struct {
	Bytes, Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the rendered ConfigMap data is %d bytes, over the limit of %d bytes", e.Bytes, e.Limit)
}

// LimitTime is the Limit of a LimitError for the wall-time budget of a render.
const LimitTime = "time"

// LimitRegexp is the Limit of a LimitError for a regular expression too
// large to compile.
const LimitRegexp = "regular expression"

// LimitPersonaTime is the Limit of a LimitError for the wall-time budget
// that a persona's prompt and its variants share.
const LimitPersonaTime = "persona time"

// LimitError reports a render that exceeded one of its limits
// (personas.md#limits). Its message names the limit.
type LimitError struct {
	// Limit names the limit: "time", "persona time", "regular expression", "units", "output", "source", "call
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

func (l *Limits) personaDurationError() *LimitError {
	return limitErrorf(LimitPersonaTime, "render budget exceeded: rendering the persona's prompt and its variants took longer than the limit of %s", l.MaxPersonaDuration)
}

// workError refuses a call to the function name whose work, estimated from
// its arguments before it runs, is more than the time left. The message
// leaves the time left out, so that it reads the same on every reconcile.
func (b *budget) workError(name string, work time.Duration) *LimitError {
	limit, what := LimitTime, b.limits.MaxDuration.String()
	if b.shared {
		limit, what = LimitPersonaTime, b.limits.MaxPersonaDuration.String()+" for the persona's prompt and its variants"
	}
	return limitErrorf(limit, "render budget exceeded: a call to %s would take longer than the limit of %s (about %s of work)",
		name, what, roundWork(work))
}

// roundWork rounds an estimate to two significant figures or so.
func roundWork(d time.Duration) time.Duration {
	for r := time.Microsecond; ; r *= 10 {
		if d < 100*r {
			return d.Round(r)
		}
		if r > time.Hour {
			return d.Round(r)
		}
	}
}

func (l *Limits) outputError(size int) *LimitError {
	return limitErrorf("output", "render budget exceeded: output of %d bytes is over the limit of %d bytes", size, l.MaxOutputBytes)
}

func (l *Limits) callDepthError() *LimitError {
	return limitErrorf("call depth", "render budget exceeded: template calls nested deeper than the limit of %d", l.MaxCallDepth)
}

// The value errors report a value a template function takes or returns
// (see measure); they share the names of the limits they draw on.

func valueDepthError(maxDepth int) *LimitError {
	return limitErrorf("value depth", "render budget exceeded: a value nested deeper than the limit of %d levels", maxDepth)
}

func valueElementsError(maxNodes int) *LimitError {
	return limitErrorf("units", "render budget exceeded: a value of more than the limit of %d elements", maxNodes)
}

// valueSizeError's what names the values, with a %d for their size.
func valueSizeError(what string, size, limit int) *LimitError {
	return limitErrorf("output", "render budget exceeded: "+what+" over the limit of %d bytes", size, limit)
}

// IncludeError reports an include cycle or include nesting over the limit.
type IncludeError struct {
	Chain []string
	Cycle bool
	Limit int
}

func (e *IncludeError) Error() string {
	if e.Cycle {
		return "include cycle: " + strings.Join(e.Chain, " -> ")
	}
	return fmt.Sprintf("include depth exceeds the limit of %d: %s", e.Limit, strings.Join(e.Chain, " -> "))
}

// standaloneError returns err as a *LimitError or *IncludeError, or nil when
// it is neither. Those errors read the same wherever they happen, so they are
// reported without the template call chain that led to them.
func standaloneError(err error) error {
	var limit *LimitError
	if errors.As(err, &limit) {
		return limit
	}
	var inc *IncludeError
	if errors.As(err, &inc) {
		return inc
	}
	return nil
}

// cleanError reports a limit or include error by itself, without the
// text/template call chain that led to it.
func cleanError(err error) error {
	if alone := standaloneError(err); alone != nil {
		return alone
	}
	return err
}

// nodeError reports msg at the position of node n of tree t, the way
// text/template reports its own parse errors.
func nodeError(t *parse.Tree, n parse.Node, msg string) error {
	loc, _ := t.ErrorContext(n)
	return fmt.Errorf("template: %s: %s", loc, msg)
}
