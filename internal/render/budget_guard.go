package render

import (
	"reflect"
	"time"
)

// The guard holds template functions to the budget (personas.md#limits). The
// function set (funcs.go) wraps every Sprig function, printf and the
// text/template builtins whose work grows with their arguments. Every call is
// charged before it runs: by default linearWork of its arguments, and by the
// function's own cost (budget_costs.go, budget_work.go, budget_regexp.go)
// when it is more than linear or its result can outgrow its arguments.

// cost is what a call will spend, told before it runs: loop-like units, the
// size of the value it builds, and the work it does, in estimated time.
type cost struct {
	units int
	bytes int
	work  time.Duration
	// sized, when set, computes the result's size exactly, once the work
	// is known to fit, or tells it is over limit; it costs as much as work.
	sized func(limit int) int
}

// costFunc tells, before a call, what it costs. A function without one costs
// its arguments' size and node count (linearWork), the cost of every
// function of the set that is linear in its input.
type costFunc func(args []reflect.Value) (cost, error)

// guard wraps fn so that every call is accounted: the clock is checked, the
// arguments must be bounded values, a cost function may refuse the call before
// it runs, a returned string must fit the output limit and a returned list
// or map spends a unit per element. A refusal panics with the error, which
// text/template turns into the call's error.
func (x *executor) guard(name string, fn any, costOf costFunc) any {
	if f, ok := fn.(func(string) string); ok {
		return x.guardText(name, f, costOf)
	}
	v := reflect.ValueOf(fn)
	t := v.Type()
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		if err := x.beforeCall(name, args, costOf); err != nil {
			panic(err)
		}
		var out []reflect.Value
		if t.IsVariadic() {
			out = v.CallSlice(args)
		} else {
			out = v.Call(args)
		}
		if len(out) > 0 {
			if err := x.afterCall(out[0]); err != nil {
				panic(err)
			}
		}
		return out
	}).Interface()
}

// guardText is guard for the commonest signature, func(string) string
// (upper, trim, b64enc, ...), without reflection: a reflective wrapper costs
// two reflective calls and a few allocations a call. The argument reaches
// beforeCall as x.textArgs, a Value of the executor's own field, which cost
// functions only read during the call. Like guard it refuses by panicking,
// which keeps fn's signature, and so its one result.
func (x *executor) guardText(name string, fn func(string) string, costOf costFunc) func(string) string {
	return func(s string) string {
		x.textArg = s
		err := x.beforeCall(name, x.textArgs[:], costOf)
		x.textArg = ""
		if err != nil {
			panic(err)
		}
		out := fn(s)
		if len(out) > x.budget.limits.MaxOutputBytes {
			panic(x.budget.limits.outputError(len(out)))
		}
		return out
	}
}

// beforeCall checks the clock, bounds the arguments, and refuses the call
// when what it costs does not fit what is left of the budget.
func (x *executor) beforeCall(name string, args []reflect.Value, costOf costFunc) error {
	b := &x.budget
	if err := b.checkTime(); err != nil {
		return err
	}
	m, err := measureWithin(b.limits, "arguments of %d bytes are", args...)
	if err != nil {
		return err
	}
	c := cost{work: linearWork(m.size, m.nodes)}
	if costOf != nil {
		fc, err := costOf(args)
		if err != nil {
			return err
		}
		fc.work = max(c.work, fc.work)
		c = fc
	}
	return b.charge(name, c)
}

// afterCall bounds what the call returned.
func (x *executor) afterCall(v reflect.Value) error {
	b := &x.budget
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		if v.Len() > b.limits.MaxOutputBytes {
			return b.limits.outputError(v.Len())
		}
	case reflect.Slice, reflect.Map, reflect.Array:
		if err := b.spend(v.Len()); err != nil {
			return err
		}
		if _, err := measureWithin(b.limits, "a value of %d bytes is", v); err != nil {
			return err
		}
	}
	return nil
}

// measureWithin measures vals against the bound on function arguments and
// results: twice the output limit, nesting bounded. what names them in the
// error, with a %d for their size.
func measureWithin(limits *Limits, what string, vals ...reflect.Value) (measure, error) {
	m := newMeasure(limits)
	for _, v := range vals {
		if err := m.value(v, 0); err != nil {
			return m, err
		}
	}
	if m.size > 2*limits.MaxOutputBytes {
		return m, valueSizeError(what, m.size, 2*limits.MaxOutputBytes)
	}
	return m, nil
}
