package render

import (
	"cmp"
	"slices"
)

// The layer sources with a fixed rank (personas.md#layers); any other source is custom.
const (
	SourceUser    = "user"
	SourcePackage = "package"
	SourceApp     = "app"
	SourceRun     = "run"
)

// The layer modes.
const (
	ModeAppend  = "append"
	ModePrepend = "prepend"
	ModeReplace = "replace"
	ModeDisable = "disable"
)

// sourceRank doubles the ranks of personas.md#layers to keep them integers: user 0,
// package 1, custom sources 1.5, app 2, run 3. An empty source is package,
// the default.
func sourceRank(source string) int {
	switch source {
	case SourceUser:
		return 0
	case SourcePackage, "":
		return 2
	case SourceApp:
		return 4
	case SourceRun:
		return 6
	}
	return 3
}

// SortLayers stable-sorts layers by the rank of their source, keeping the
// relative order of layers of the same rank.
func SortLayers(layers []Layer) {
	slices.SortStableFunc(layers, compareRanks)
}

func compareRanks(a, b Layer) int { return cmp.Compare(sourceRank(a.Source), sourceRank(b.Source)) }

// sortedLayers returns layers in rank order, copying only when they are not.
func sortedLayers(layers []Layer) []Layer {
	if slices.IsSortedFunc(layers, compareRanks) {
		return layers
	}
	out := slices.Clone(layers)
	SortLayers(out)
	return out
}

// applyLayer combines a rendered, normalized layer piece with the pieces so far.
func applyLayer(spans []span, mode string, p span) []span {
	if mode == ModeDisable {
		return spans[:0]
	}
	if p.start == p.end {
		return spans
	}
	switch mode {
	case ModePrepend:
		return append([]span{p}, spans...)
	case ModeReplace:
		return append(spans[:0], p)
	default:
		return append(spans, p)
	}
}
