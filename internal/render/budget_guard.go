package render

import "reflect"

// The guard holds template functions to the budget (personas.md#limits). The
// function set (funcs.go) wraps every Sprig function and the text/template
// builtins that can build large strings with it; the cost of each Sprig
// function whose result can outgrow its arguments is in budget_costs.go.

// costFunc tells, before a call, the units it spends and the size of the
// string it builds, for functions whose cost is not bounded by their arguments.
type costFunc func(args []reflect.Value) (units, bytes int, err error)

// guard wraps fn so that every call is accounted: the clock is checked, the
// arguments must be bounded values, a cost function may refuse the call before
// it runs, a returned string must fit the output limit and a returned list
// or map spends a unit per element. A refusal panics with the error, which
// text/template turns into the call's error.
func (x *executor) guard(fn any, cost costFunc) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		if err := x.beforeCall(args, cost); err != nil {
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

// beforeCall checks the clock, bounds the arguments and lets cost refuse
// the call before it runs.
func (x *executor) beforeCall(args []reflect.Value, cost costFunc) error {
	b := &x.budget
	if err := b.checkTime(); err != nil {
		return err
	}
	if err := measureWithin(b.limits, "arguments of %d bytes are", args...); err != nil {
		return err
	}
	if cost == nil {
		return nil
	}
	units, bytes, err := cost(args)
	if err != nil {
		return err
	}
	if err := b.spend(units); err != nil {
		return err
	}
	if bytes > b.limits.MaxOutputBytes || bytes < 0 {
		return b.limits.outputError(bytes)
	}
	return nil
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
		if err := measureWithin(b.limits, "a value of %d bytes is", v); err != nil {
			return err
		}
	}
	return nil
}

// measureWithin measures vals against the bound on function arguments and
// results: twice the output limit, nesting bounded. what names them in the
// error, with a %d for their size.
func measureWithin(limits *Limits, what string, vals ...reflect.Value) error {
	m := newMeasure(limits)
	for _, v := range vals {
		if err := m.value(v, 0); err != nil {
			return err
		}
	}
	if m.size > 2*limits.MaxOutputBytes {
		return valueSizeError(what, m.size, 2*limits.MaxOutputBytes)
	}
	return nil
}
