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
	p := &parsed{name: name}
	if len(src) > limits.MaxSourceBytes {
		p.err = limits.sourceError(len(src))
		return p
	}
	trees, err := parse.Parse(name, src, "", "", publicFuncNames(), builtinNames)
	if err != nil {
		p.err = err
		return p
	}
	p.main = trees[name]
	for n, t := range trees {
		if n != name {
			p.defines = append(p.defines, t)
		}
	}
	called := map[string]bool{}
	for _, t := range trees {
		if err := inspect(t, trees, called, &p.includes); err != nil {
			p.err = err
			return p
		}
	}
	for _, t := range trees {
		instrumentRanges(t.Root)
		if called[t.Name] {
			instrumentCall(t)
		}
	}
	p.empty = parse.IsEmptyTree(p.main.Root)
	return p
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

func nodeError(t *parse.Tree, n parse.Node, msg string) error {
	loc, _ := t.ErrorContext(n)
	return fmt.Errorf("template: %s: %s", loc, msg)
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

// Budget checks are text nodes whose bytes are one of these sentinels:
// text/template hands a text node's own slice to the writer, and the
// budgetWriter recognizes the sentinel by its address and accounts for it
// instead of writing it. No template can produce these slices, and a check
// costs an interface call rather than a reflective function call.
var (
	tickMark  = []byte{0}
	enterMark = []byte{0}
	leaveMark = []byte{0}
)

// instrumentRanges puts a budget check at the start of every range body, so
// each iteration draws on the budget, however the range is written.
func instrumentRanges(n parse.Node) {
	walkNodes(n, func(n parse.Node) bool {
		if r, ok := n.(*parse.RangeNode); ok {
			r.List.Nodes = append([]parse.Node{budgetNode(r.Position(), tickMark)}, r.List.Nodes...)
		}
		return true
	})
}

// instrumentCall brackets a called template's body with enter and leave, so
// each call draws on the budget and recursion depth is bounded.
func instrumentCall(t *parse.Tree) {
	pos := t.Root.Position()
	nodes := make([]parse.Node, 0, len(t.Root.Nodes)+2)
	nodes = append(nodes, budgetNode(pos, enterMark))
	nodes = append(nodes, t.Root.Nodes...)
	nodes = append(nodes, budgetNode(pos, leaveMark))
	t.Root.Nodes = nodes
}

func budgetNode(pos parse.Pos, mark []byte) *parse.TextNode {
	return &parse.TextNode{NodeType: parse.NodeText, Pos: pos, Text: mark}
}

// parseCache holds parsed templates by name and source, so a re-render
// never re-parses. It keeps two generations and drops the older one when the
// newer has taken in maxCacheBytes of source, bounding its memory.
type parseCache struct {
	limits    *Limits
	mu        sync.RWMutex
	current   map[cacheKey]*parsed
	previous  map[cacheKey]*parsed
	currBytes int
	// parses counts parses, for tests.
	parses int
}

type cacheKey struct {
	kind SectionKind
	name string
	src  string
}

func (c *parseCache) get(kind SectionKind, name, src string) *parsed {
	k := cacheKey{kind, name, src}
	c.mu.RLock()
	p := c.current[k]
	c.mu.RUnlock()
	if p != nil {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p = c.current[k]; p != nil {
		return p
	}
	if p = c.previous[k]; p == nil {
		p = parseTemplate(SectionName(kind, name), src, c.limits)
		c.parses++
	}
	if c.currBytes+len(name)+len(src) > maxCacheBytes {
		c.previous, c.current, c.currBytes = c.current, map[cacheKey]*parsed{}, 0
	}
	c.current[k] = p
	c.currBytes += len(name) + len(src)
	return p
}

const maxCacheBytes = 32 << 20

func newParseCache(l *Limits) *parseCache {
	return &parseCache{limits: l, current: map[cacheKey]*parsed{}}
}
