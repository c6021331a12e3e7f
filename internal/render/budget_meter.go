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
}

func (b *budget) reset(l *Limits, now time.Time) {
	*b = budget{limits: l, deadline: now.Add(l.MaxDuration)}
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
		b.err = b.limits.durationError()
		return b.err
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
