package render

import (
	"fmt"
	"reflect"
	"strings"
	"text/template/parse"

	"github.com/persona-operator/persona-operator/internal/suggest"
)

// Check reports whether a template source would be accepted at admission
// (SPEC §8): it parses with the function set of §4.3, names include layers
// literally, stays within the source limit, and every field chain on . names
// a variable of §4.1 wherever the type of . is known statically: at the top
// level, and inside range and with over a known field.
func (e *Engine) Check(kind SectionKind, name, src string) error {
	p := e.cache.get(kind, name, src)
	if p.err != nil {
		return p.err
	}
	p.checkOnce.Do(func() { p.checkErr = checkFields(p) })
	return p.checkErr
}

var dataType = reflect.TypeFor[Data]()

func checkFields(p *parsed) error {
	c := &fieldChecker{tree: p.main}
	if err := c.list(p.main.Root, dataType, dataType); err != nil {
		return err
	}
	// A defined template's . is whatever its caller passes: unknown.
	for _, t := range p.defines {
		c := &fieldChecker{tree: t}
		if err := c.list(t.Root, nil, nil); err != nil {
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
func (c *fieldChecker) list(l *parse.ListNode, dot, root reflect.Type) error {
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

func (c *fieldChecker) node(n parse.Node, dot, root reflect.Type) error {
	switch n := n.(type) {
	case *parse.ActionNode:
		_, err := c.pipe(n.Pipe, dot, root)
		return err
	case *parse.IfNode:
		if _, err := c.pipe(n.Pipe, dot, root); err != nil {
			return err
		}
		if err := c.list(n.List, dot, root); err != nil {
			return err
		}
		return c.list(n.ElseList, dot, root)
	case *parse.WithNode:
		t, err := c.pipe(n.Pipe, dot, root)
		if err != nil {
			return err
		}
		if err := c.list(n.List, t, root); err != nil {
			return err
		}
		return c.list(n.ElseList, dot, root)
	case *parse.RangeNode:
		t, err := c.pipe(n.Pipe, dot, root)
		if err != nil {
			return err
		}
		if err := c.list(n.List, elemType(t), root); err != nil {
			return err
		}
		return c.list(n.ElseList, dot, root)
	case *parse.TemplateNode:
		_, err := c.pipe(n.Pipe, dot, root)
		return err
	}
	return nil
}

// pipe checks a pipeline and returns the type of its value when it is known.
func (c *fieldChecker) pipe(p *parse.PipeNode, dot, root reflect.Type) (reflect.Type, error) {
	if p == nil {
		return nil, nil
	}
	var last reflect.Type
	for i, cmd := range p.Cmds {
		t, err := c.command(cmd, dot, root)
		if err != nil {
			return nil, err
		}
		if i == len(p.Cmds)-1 {
			last = t
		}
	}
	return last, nil
}

// command checks the arguments of a command; the type is known only for a
// command that is a single field chain.
func (c *fieldChecker) command(cmd *parse.CommandNode, dot, root reflect.Type) (reflect.Type, error) {
	var result reflect.Type
	for _, arg := range cmd.Args {
		var t reflect.Type
		var err error
		switch a := arg.(type) {
		case *parse.DotNode:
			t = dot
		case *parse.FieldNode:
			t, err = c.chain(a, dot, "", a.Ident)
		case *parse.VariableNode:
			if a.Ident[0] == "$" && len(a.Ident) > 1 {
				t, err = c.chain(a, root, "$", a.Ident[1:])
			} else if a.Ident[0] == "$" {
				t = root
			}
		case *parse.ChainNode:
			var inner reflect.Type
			if pn, ok := a.Node.(*parse.PipeNode); ok {
				inner, err = c.pipe(pn, dot, root)
			}
			if err == nil && inner != nil {
				t, err = c.chain(a, inner, "("+a.Node.String()+")", a.Field)
			}
		case *parse.PipeNode:
			t, err = c.pipe(a, dot, root)
		}
		if err != nil {
			return nil, err
		}
		if len(cmd.Args) == 1 {
			result = t
		}
	}
	return result, nil
}

// chain follows fields from a value of type t; t nil means unknown.
func (c *fieldChecker) chain(n parse.Node, t reflect.Type, prefix string, fields []string) (reflect.Type, error) {
	path := prefix
	for _, f := range fields {
		if t == nil {
			return nil, nil
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			sf, ok := t.FieldByName(f)
			if !ok || !sf.IsExported() {
				return nil, c.unknownField(n, t, path, f)
			}
			t = sf.Type
		case reflect.Map:
			t = t.Elem()
		case reflect.Interface:
			return nil, nil
		default:
			return nil, nodeError(c.tree, n, fmt.Sprintf("%s is a %s and has no field %s", describePath(path), kindName(t), f))
		}
		path += "." + f
	}
	return t, nil
}

func (c *fieldChecker) unknownField(n parse.Node, t reflect.Type, path, f string) error {
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			names = append(names, t.Field(i).Name)
		}
	}
	msg := fmt.Sprintf("%s has no field %s", describePath(path), f)
	if s := suggest.Closest(f, names); s != "" {
		msg += fmt.Sprintf(" (did you mean .%s?)", s)
	}
	return nodeError(c.tree, n, msg)
}

func describePath(path string) string {
	switch {
	case path == "":
		return "."
	case path == "$":
		return "$"
	}
	return path
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

// elemType is the type of . inside a range over a value of type t.
func elemType(t reflect.Type) reflect.Type {
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return t.Elem()
	case reflect.Int:
		return t
	}
	return nil
}
