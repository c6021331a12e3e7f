package render

import (
	"fmt"
	"reflect"
	"strings"
	"text/template/parse"

	"github.com/persona-operator/persona-operator/internal/suggest"
)

// Check reports whether a template source would be accepted at admission
// (personas.md#validating-before-apply): it parses with the function set of personas.md#functions, names include layers
// literally, stays within the source limit, and every field chain on . names
// a variable of personas.md#variables wherever the type of . is known statically: at the top
// level, and inside range and with over a known field.
func (e *Engine) Check(kind SectionKind, name, src string) error {
	return e.cache.get(kind, name, src).check()
}

// Inspect checks a template source as Check does and returns the layers its
// include calls name, in order, as Includes does. It keeps nothing: a source
// the cache holds is not parsed again, and any other is parsed and dropped,
// so templates that may never be stored or rendered (admission's: dry runs,
// refused objects, direct calls) fill no cache.
func (e *Engine) Inspect(kind SectionKind, name, src string) (includes []string, err error) {
	p := e.cache.peek(kind, name, src)
	if p == nil {
		p = parseChecked(SectionName(kind, name), src, &e.limits)
	}
	return p.includes, p.check()
}

// check is Check's verdict on p, computed once.
func (p *parsed) check() error {
	if p.err != nil {
		return p.err
	}
	p.checkOnce.Do(func() { p.checkErr = checkFields(p) })
	return p.checkErr
}

var dataType = reflect.TypeFor[Data]()

// typed is the static type of a value, when known, and how to name it in messages.
type typed struct {
	t    reflect.Type // nil: unknown
	desc string
}

var (
	unknown = typed{}
	topDot  = typed{dataType, ""}
)

func checkFields(p *parsed) error {
	c := &fieldChecker{tree: p.main}
	if err := c.list(p.main.Root, topDot, typed{dataType, "$"}); err != nil {
		return err
	}
	// A defined template's . is whatever its caller passes: unknown.
	for _, t := range p.defines {
		c := &fieldChecker{tree: t}
		if err := c.list(t.Root, unknown, unknown); err != nil {
			return err
		}
	}
	return nil
}

type fieldChecker struct {
	tree *parse.Tree
}

// list checks the nodes of a list with dot of type dot (nil: unknown) and $
// of type root (nil: unknown).
func (c *fieldChecker) list(l *parse.ListNode, dot, root typed) error {
	if l == nil {
		return nil
	}
	for _, n := range l.Nodes {
		if err := c.node(n, dot, root); err != nil {
			return err
		}
	}
	return nil
}

func (c *fieldChecker) node(n parse.Node, dot, root typed) error {
	switch n := n.(type) {
	case *parse.ActionNode:
		_, err := c.pipe(n.Pipe, dot, root)
		return err
	case *parse.IfNode:
		return c.branch(&n.BranchNode, dot, root, func(typed) typed { return dot })
	case *parse.WithNode:
		return c.branch(&n.BranchNode, dot, root, func(value typed) typed { return value })
	case *parse.RangeNode:
		return c.branch(&n.BranchNode, dot, root, elemType)
	case *parse.TemplateNode:
		_, err := c.pipe(n.Pipe, dot, root)
		return err
	}
	return nil
}

// branch checks an if, with or range: its pipeline, its body with . of the
// type body gives for the pipeline's value, and its else with . unchanged.
func (c *fieldChecker) branch(n *parse.BranchNode, dot, root typed, body func(value typed) typed) error {
	t, err := c.pipe(n.Pipe, dot, root)
	if err != nil {
		return err
	}
	if err := c.list(n.List, body(t), root); err != nil {
		return err
	}
	return c.list(n.ElseList, dot, root)
}

// pipe checks a pipeline and returns the type of its value when it is known.
func (c *fieldChecker) pipe(p *parse.PipeNode, dot, root typed) (typed, error) {
	if p == nil {
		return unknown, nil
	}
	var last typed
	for i, cmd := range p.Cmds {
		t, err := c.command(cmd, dot, root)
		if err != nil {
			return unknown, err
		}
		if i == len(p.Cmds)-1 {
			last = t
		}
	}
	return last, nil
}

// command checks the arguments of a command; the type is known only for a
// command that is a single field chain.
func (c *fieldChecker) command(cmd *parse.CommandNode, dot, root typed) (typed, error) {
	var result typed
	for _, arg := range cmd.Args {
		t, err := c.arg(arg, dot, root)
		if err != nil {
			return unknown, err
		}
		if len(cmd.Args) == 1 {
			result = t
		}
	}
	return result, nil
}

// arg checks one argument of a command and returns its type when it is known:
// ., a field chain on ., $ or a parenthesized pipeline, or a pipeline.
func (c *fieldChecker) arg(arg parse.Node, dot, root typed) (typed, error) {
	switch a := arg.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.FieldNode:
		return c.chain(a, dot, a.Ident)
	case *parse.VariableNode:
		if a.Ident[0] == "$" {
			return c.chain(a, root, a.Ident[1:])
		}
	case *parse.ChainNode:
		var inner typed
		var err error
		if pn, ok := a.Node.(*parse.PipeNode); ok {
			inner, err = c.pipe(pn, dot, root)
		}
		if err == nil && inner.t != nil {
			return c.chain(a, typed{inner.t, "(" + a.Node.String() + ")"}, a.Field)
		}
		return unknown, err
	case *parse.PipeNode:
		return c.pipe(a, dot, root)
	}
	return unknown, nil
}

// chain follows fields from a value; an unknown type ends the check.
func (c *fieldChecker) chain(n parse.Node, from typed, fields []string) (typed, error) {
	t, desc := from.t, from.desc
	for _, f := range fields {
		if t == nil {
			return unknown, nil
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			sf, ok := t.FieldByName(f)
			if !ok || !sf.IsExported() {
				return unknown, c.unknownField(n, t, desc, f)
			}
			t = sf.Type
		case reflect.Map:
			t = t.Elem()
		case reflect.Interface:
			return unknown, nil
		default:
			return unknown, nodeError(c.tree, n, fmt.Sprintf("%s is a %s and has no field %s", describe(desc), kindName(t), f))
		}
		desc += "." + f
	}
	return typed{t, desc}, nil
}

func (c *fieldChecker) unknownField(n parse.Node, t reflect.Type, desc, f string) error {
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			names = append(names, t.Field(i).Name)
		}
	}
	msg := fmt.Sprintf("%s has no field %s", describe(desc), f)
	if t == dataType && (desc == "" || desc == "$") {
		msg = fmt.Sprintf("%s.%s is not a template variable", desc, f)
	}
	if s := suggest.Closest(f, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return nodeError(c.tree, n, msg)
}

func describe(desc string) string {
	if desc == "" {
		return "."
	}
	return desc
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	}
	return strings.ToLower(t.Kind().String())
}

// elemType is . inside a range over a value.
func elemType(v typed) typed {
	if v.t == nil {
		return unknown
	}
	switch v.t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return typed{v.t.Elem(), "an element of " + describe(v.desc)}
	case reflect.Int:
		return typed{v.t, "the index of range " + describe(v.desc)}
	}
	return unknown
}
