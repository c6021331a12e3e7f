package render

import (
	"fmt"
	"sync"
	"text/template/parse"
)

// parsed is one template source parsed, checked and instrumented. It is
// immutable once built and shared by every render that uses the same source.
type parsed struct {
	name string
	main *parse.Tree
	// defines are the trees of the source's {{define}} and {{block}} actions.
	defines []*parse.Tree
	// includes are the layer names of the source's include calls, in order.
	includes []string
	// empty is true when executing main would write nothing but spaces.
	empty bool
	err   error
	// size is estimateSize's estimate of the memory this keeps.
	size int
	// origin is the origin of a layer's pieces, layer/<name> or
	// clusterlayer/<name>, built once rather than on every render.
	origin string

	checkOnce sync.Once
	checkErr  error
}

// builtinNames are text/template's builtin functions, which the parser must know.
var builtinNames = map[string]any{
	"and": true, "call": true, "html": true, "index": true, "slice": true, "js": true,
	"len": true, "not": true, "or": true, "print": true, "printf": true, "println": true,
	"urlquery": true, "eq": true, "ge": true, "gt": true, "le": true, "lt": true, "ne": true,
}

// parseTemplate parses src under name with the function set of personas.md#functions,
// checks what can be checked without data, and inserts the budget checks.
func parseTemplate(name, src string, limits *Limits) *parsed {
	p := parseChecked(name, src, limits)
	p.size = estimateSize(p, src)
	return p
}

func parseChecked(name, src string, limits *Limits) *parsed {
	p := &parsed{name: name}
	if len(src) > limits.MaxSourceBytes {
		p.err = limits.sourceError(len(src))
		return p
	}
	trees, err := parse.Parse(name, src, "", "", publicFuncNames(), builtinNames)
	if err != nil {
		p.err = withParseHint(err, src)
		return p
	}
	p.main, p.defines = splitDefines(trees, name)
	called, err := inspectCalls(trees, &p.includes)
	if err != nil {
		p.err = err
		return p
	}
	instrument(trees, called)
	p.empty = parse.IsEmptyTree(p.main.Root)
	return p
}

// splitDefines separates the main tree, named after the source, from those
// of its {{define}} and {{block}} actions.
func splitDefines(trees map[string]*parse.Tree, name string) (main *parse.Tree, defines []*parse.Tree) {
	for n, t := range trees {
		if n != name {
			defines = append(defines, t)
		}
	}
	return trees[name], defines
}

// inspectCalls inspects every tree of one source, appending the layers its
// include calls name to includes, and returns the names of the templates
// that {{template}} calls.
func inspectCalls(trees map[string]*parse.Tree, includes *[]string) (map[string]bool, error) {
	called := map[string]bool{}
	for _, t := range trees {
		if err := inspect(t, trees, called, includes); err != nil {
			return nil, err
		}
	}
	return called, nil
}

// inspect checks the calls of one tree: a {{template}} must name a template
// of the same source (sources never share templates), and include takes a
// literal layer name, which it records.
func inspect(t *parse.Tree, trees map[string]*parse.Tree, called map[string]bool, includes *[]string) error {
	var err error
	walkNodes(t.Root, func(n parse.Node) bool {
		switch n := n.(type) {
		case *parse.TemplateNode:
			if trees[n.Name] == nil {
				err = nodeError(t, n, fmt.Sprintf("template %q is not defined", n.Name))
				return false
			}
			called[n.Name] = true
		case *parse.PipeNode:
			for i, cmd := range n.Cmds {
				if e := inspectInclude(t, cmd, i > 0, includes); e != nil {
					err = e
					return false
				}
			}
		}
		return true
	})
	return err
}

// inspectInclude checks an include command: a literal layer name and the
// data, which a later command of a pipeline receives from the one before.
func inspectInclude(t *parse.Tree, cmd *parse.CommandNode, piped bool, includes *[]string) error {
	id, ok := cmd.Args[0].(*parse.IdentifierNode)
	if !ok || id.Ident != "include" {
		return nil
	}
	if len(cmd.Args) < 2 {
		return nodeError(t, cmd, `include needs a layer name and data: {{ include "layer-name" . }}`)
	}
	lit, ok := cmd.Args[1].(*parse.StringNode)
	if !ok {
		return nodeError(t, cmd, fmt.Sprintf("include takes a literal layer name, not %s", cmd.Args[1]))
	}
	want := 3 // include, the name, the data
	if piped {
		want = 2
	}
	if len(cmd.Args) != want {
		return nodeError(t, cmd, `include takes a layer name and data: {{ include "layer-name" . }}`)
	}
	*includes = append(*includes, lit.Text)
	return nil
}

// walkNodes calls visit for n and every node below it, depth first, until
// visit returns false.
func walkNodes(n parse.Node, visit func(parse.Node) bool) bool {
	switch n := n.(type) {
	case nil:
		return true
	case *parse.PipeNode:
		if n == nil {
			return true
		}
	case *parse.ListNode:
		if n == nil {
			return true
		}
	}
	if !visit(n) {
		return false
	}
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if !walkNodes(c, visit) {
				return false
			}
		}
	case *parse.ActionNode:
		return walkNodes(n.Pipe, visit)
	case *parse.PipeNode:
		for _, c := range n.Cmds {
			if !walkNodes(c, visit) {
				return false
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			if !walkNodes(a, visit) {
				return false
			}
		}
	case *parse.ChainNode:
		return walkNodes(n.Node, visit)
	case *parse.IfNode:
		return walkBranch(&n.BranchNode, visit)
	case *parse.RangeNode:
		return walkBranch(&n.BranchNode, visit)
	case *parse.WithNode:
		return walkBranch(&n.BranchNode, visit)
	case *parse.TemplateNode:
		return walkNodes(n.Pipe, visit)
	}
	return true
}

func walkBranch(b *parse.BranchNode, visit func(parse.Node) bool) bool {
	return walkNodes(b.Pipe, visit) && walkNodes(b.List, visit) && walkNodes(b.ElseList, visit)
}
