package render

import (
	"time"
)

// budget is the running account of one render against its Limits
// (personas.md#limits): every loop iteration, template call, list element and
// output byte draws on it, and the wall time is checked as it goes. Once
// exceeded it stays exceeded, so the render fails.
type budget struct {
	limits   *Limits
	deadline time.Time
	units    int
	output   int
	depth    int
	err      *LimitError
	// shared tells that the deadline is the persona's (MaxPersonaDuration),
	// which comes before the render's own.
	shared bool
}

// reset starts a render at now. personaDeadline, when not zero, is the end of
// the budget that the persona's prompt and variants share; the render ends at
// whichever of it and its own limit comes first.
func (b *budget) reset(l *Limits, now, personaDeadline time.Time) {
	*b = budget{limits: l, deadline: now.Add(l.MaxDuration)}
	if !personaDeadline.IsZero() && personaDeadline.Before(b.deadline) {
		b.deadline, b.shared = personaDeadline, true
	}
}

// spend draws n units; it also checks the clock, every 64 units or so.
func (b *budget) spend(n int) error {
	if b.err != nil {
		return b.err
	}
	before := b.units
	b.units += n
	if n < 0 || b.units > b.limits.MaxUnits || b.units < before {
		b.err = b.limits.unitsError()
		return b.err
	}
	if b.units>>6 != before>>6 {
		return b.checkTime()
	}
	return nil
}

func (b *budget) checkTime() error {
	if b.err != nil {
		return b.err
	}
	if time.Now().After(b.deadline) {
		b.err = b.durationError()
		return b.err
	}
	return nil
}

func (b *budget) durationError() *LimitError {
	if b.shared {
		return b.limits.personaDurationError()
	}
	return b.limits.durationError()
}

// minCheckedWork is the least work whose call is checked against the time
// left: a cheaper call cannot overrun the slack the limits allow.
const minCheckedWork = time.Millisecond

// charge spends what a call of the function name costs, before it runs, and
// refuses the call when it does not fit: too many units, a result over the
// output limit, or more work than the time left.
func (b *budget) charge(name string, c cost) error {
	if err := b.spend(c.units); err != nil {
		return err
	}
	if c.bytes > b.limits.MaxOutputBytes || c.bytes < 0 {
		return b.limits.outputError(c.bytes)
	}
	if c.work >= minCheckedWork {
		if c.work > time.Until(b.deadline) {
			return b.workError(name, c.work)
		}
	}
	if c.sized != nil {
		if n := c.sized(b.limits.MaxOutputBytes); n > b.limits.MaxOutputBytes {
			return b.limits.outputError(n)
		}
	}
	return nil
}

// produce accounts for n output bytes.
func (b *budget) produce(n int) error {
	if b.err != nil {
		return b.err
	}
	b.output += n
	if b.output > b.limits.MaxOutputBytes {
		b.err = b.limits.outputError(b.output)
		return b.err
	}
	return nil
}

// enter and leave bracket a template call.
func (b *budget) enter() error {
	if err := b.spend(1); err != nil {
		return err
	}
	b.depth++
	if b.depth > b.limits.MaxCallDepth {
		b.err = b.limits.callDepthError()
		return b.err
	}
	return nil
}

func (b *budget) leave() { b.depth-- }
