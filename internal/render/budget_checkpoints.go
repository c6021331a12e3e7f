package render

import "text/template/parse"

// Executing a template draws on the budget through checkpoints that
// parseTemplate inserts into its parse trees, and through the writer every
// template writes to, which spends at each checkpoint and accounts every
// output byte.

// Checkpoints are text nodes whose bytes are one of these sentinels:
// text/template hands a text node's own slice to the writer, and the
// budgetWriter recognizes the sentinel by its address and accounts for it
// instead of writing it. No template can produce these slices, and a check
// costs an interface call rather than a reflective function call.
var (
	tickMark  = []byte{0}
	enterMark = []byte{0}
	leaveMark = []byte{0}
)

// instrument inserts the checkpoints into the trees of one source: every
// range body, and the body of every template that {{template}} calls.
func instrument(trees map[string]*parse.Tree, called map[string]bool) {
	for _, t := range trees {
		instrumentRanges(t.Root)
		if called[t.Name] {
			instrumentCall(t)
		}
	}
}

// instrumentRanges puts a budget check at the start of every range body, so
// each iteration draws on the budget, however the range is written.
func instrumentRanges(n parse.Node) {
	walkNodes(n, func(n parse.Node) bool {
		if r, ok := n.(*parse.RangeNode); ok {
			r.List.Nodes = append([]parse.Node{checkpoint(r.Position(), tickMark)}, r.List.Nodes...)
		}
		return true
	})
}

// instrumentCall brackets a called template's body with enter and leave, so
// each call draws on the budget and recursion depth is bounded.
func instrumentCall(t *parse.Tree) {
	pos := t.Root.Position()
	nodes := make([]parse.Node, 0, len(t.Root.Nodes)+2)
	nodes = append(nodes, checkpoint(pos, enterMark))
	nodes = append(nodes, t.Root.Nodes...)
	nodes = append(nodes, checkpoint(pos, leaveMark))
	t.Root.Nodes = nodes
}

func checkpoint(pos parse.Pos, mark []byte) *parse.TextNode {
	return &parse.TextNode{NodeType: parse.NodeText, Pos: pos, Text: mark}
}

// budgetWriter accounts every byte a template writes before keeping it, and
// turns the checkpoints it is handed into draws on the budget.
type budgetWriter struct {
	budget *budget
	buf    []byte
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	if len(p) == 1 {
		var err error
		switch &p[0] {
		case &tickMark[0]:
			err = w.budget.spend(1)
		case &enterMark[0]:
			err = w.budget.enter()
		case &leaveMark[0]:
			w.budget.leave()
		default:
			return w.write(p)
		}
		if err != nil {
			return 0, err
		}
		return 1, nil
	}
	return w.write(p)
}

func (w *budgetWriter) write(p []byte) (int, error) {
	if err := w.budget.produce(len(p)); err != nil {
		return 0, err
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}
