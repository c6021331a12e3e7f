package render

import "text/template/parse"

// A parse tree costs far more memory than its source: a 64 KiB source of
// small actions is 2 to 5 MB of nodes. Caches of parsed templates are
// therefore sized by this estimate of what a parsed source keeps, not by
// its length.

// The weights are calibrated with runtime.MemStats by
// TestParsedSizeEstimate, over small sources and over 64 KiB sources of
// the densest shapes of every kind of node.
const (
	// bytesPerNode is the memory a parse node keeps, with its slot in its
	// parent's list and its share of its parent's slices.
	bytesPerNode = 72
	// bytesPerNumber is the same for a number, whose node holds the value
	// in every numeric type.
	bytesPerNumber = 112
	// bytesPerTree is what each parse tree keeps besides its nodes: the
	// parsed and Tree structs, and a cache entry.
	bytesPerTree = 384
	// maxBytesPerSourceByte bounds what a parse keeps per byte of source,
	// whatever its shape: the densest (nested parentheses) keeps 79.
	maxBytesPerSourceByte = 96
)

// MaxParsedBytes bounds the memory that parsing one template of n source
// bytes keeps, at most MaxSourceBytes of them: the webhook weighs what it
// lets in at once by it.
func (l Limits) MaxParsedBytes(n int) int {
	return min(n, l.MaxSourceBytes) * maxBytesPerSourceByte
}

// estimateSize is the memory p keeps, in bytes: its trees and nodes, the
// text they copy out of the source, and the source itself, which the trees
// and the cache key share.
func estimateSize(p *parsed, src string) int {
	size := bytesPerTree + len(p.name) + len(src)
	if p.main == nil {
		return size
	}
	count := func(n parse.Node) bool {
		switch n := n.(type) {
		case *parse.NumberNode:
			size += bytesPerNumber
		case *parse.TextNode:
			size += bytesPerNode + len(n.Text)
		case *parse.StringNode:
			size += bytesPerNode + len(n.Text)
		case *parse.PipeNode:
			// Declared variables are nodes that walkNodes does not visit.
			size += bytesPerNode * (1 + len(n.Decl))
		default:
			size += bytesPerNode
		}
		return true
	}
	walkNodes(p.main.Root, count)
	for _, t := range p.defines {
		size += bytesPerTree
		walkNodes(t.Root, count)
	}
	return size
}
