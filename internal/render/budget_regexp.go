package render

import (
	"math"
	"reflect"
	"regexp"
	"regexp/syntax"
	"time"
)

// Regular expressions cost what Go's matchers do at worst: the NFA steps
// every instruction of the compiled program over every byte of the input, so
// a match costs the program's size times the input's length, and every
// function that looks for all matches may scan the rest of the input again
// after each one. The program is sized from the parse tree before it is
// compiled, since counted repeats expand as they compile.
const (
	// maxRegexpSource bounds a pattern's length, and so its parse.
	maxRegexpSource = 64 << 10
	// maxRegexpInsts bounds a compiled program's instructions.
	maxRegexpInsts = 10_000
	// regexpStep is the time of one instruction over one byte of input,
	// measured at worst (about 22 ns, patterns of 30 to 3,000 character
	// classes over 80 to 800 KB, on a loaded 2-core EPYC), with a margin.
	regexpStep = 40 * time.Nanosecond
	// regexpCompileStep is the time compiling takes per instruction.
	regexpCompileStep = 200 * time.Nanosecond
)

// boundedRegexp is a pattern whose program is known to be within bounds,
// with what its cost is computed from. It is compiled for matching only
// where the cost needs it: the function that is charged compiles it anyway.
type boundedRegexp struct {
	pattern string
	tree    *syntax.Regexp
	insts   int
}

// compileBounded checks pattern as regexp.Compile would parse it, refusing
// one whose program is too large before building it.
func compileBounded(pattern string) (*boundedRegexp, error) {
	if len(pattern) > maxRegexpSource {
		return nil, limitErrorf(LimitRegexp, "render budget exceeded: a regular expression of %d bytes, over the limit of %d bytes", len(pattern), maxRegexpSource)
	}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	if n := addCap(expandedSize(tree), programOverhead); n > maxRegexpInsts {
		return nil, regexpSizeError(n)
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) > maxRegexpInsts {
		return nil, regexpSizeError(len(prog.Inst))
	}
	return &boundedRegexp{pattern: pattern, tree: tree, insts: len(prog.Inst)}, nil
}

// regexp is the pattern compiled for matching; its program is bounded.
func (b *boundedRegexp) regexp() *regexp.Regexp { return regexp.MustCompile(b.pattern) }

func regexpSizeError(n int) error {
	if n > 10*maxRegexpInsts {
		return limitErrorf(LimitRegexp, "render budget exceeded: a regular expression of more than %d instructions, over the limit of %d", 10*maxRegexpInsts, maxRegexpInsts)
	}
	return limitErrorf(LimitRegexp, "render budget exceeded: a regular expression of %d instructions, over the limit of %d", n, maxRegexpInsts)
}

// programOverhead is the instructions every program has besides its
// expression's: a fail, the whole match's capture and the match.
const programOverhead = 4

// expandedSize bounds the instructions re compiles to, counted repeats
// expanded, besides programOverhead; it saturates past ten times the limit.
func expandedSize(re *syntax.Regexp) int {
	const ceiling = 10*maxRegexpInsts + 1
	sum := func(subs []*syntax.Regexp) int {
		n := 0
		for _, s := range subs {
			n = min(addCap(n, expandedSize(s)), ceiling)
		}
		return n
	}
	switch re.Op {
	case syntax.OpLiteral:
		return min(len(re.Rune), ceiling)
	case syntax.OpConcat:
		return sum(re.Sub)
	case syntax.OpAlternate:
		return min(addCap(sum(re.Sub), len(re.Sub)), ceiling)
	case syntax.OpCapture:
		return min(addCap(sum(re.Sub), 2), ceiling)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return min(addCap(sum(re.Sub), 2), ceiling)
	case syntax.OpRepeat:
		// x{n,m} simplifies to n copies of x and m-n nested optional ones,
		// each of those one instruction more; x{n,} to n copies and x*.
		sub := sum(re.Sub)
		optional := re.Max - re.Min
		if re.Max < 0 {
			optional = 1
		}
		return min(addCap(mulCap(re.Min, sub), mulCap(max(optional, 0), addCap(sub, 2))), ceiling)
	}
	return 1
}

// maxMatchLen bounds the bytes one match of re spans, or -1 when it is not
// bounded.
func maxMatchLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return mulCap(len(re.Rune), 4)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 4
	case syntax.OpCapture, syntax.OpQuest:
		return maxMatchLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if maxMatchLen(re.Sub[0]) == 0 {
			return 0
		}
		return -1
	case syntax.OpRepeat:
		sub := maxMatchLen(re.Sub[0])
		if sub == 0 {
			return 0
		}
		if sub < 0 || re.Max < 0 {
			return -1
		}
		return mulCap(sub, re.Max)
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			m := maxMatchLen(s)
			if m < 0 {
				return -1
			}
			n = addCap(n, m)
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			m := maxMatchLen(s)
			if m < 0 {
				return -1
			}
			n = max(n, m)
		}
		return n
	}
	return 0
}

// regexpWork is the time of steps instructions-by-bytes, saturating.
func regexpWork(insts, bytes int) time.Duration {
	return workOf(mulCap(insts, bytes), regexpStep)
}

// regexpOneCost is the cost of a function that compiles pattern and looks for
// its first match in s.
func regexpOneCost(pattern, s string) (*boundedRegexp, cost, error) {
	re, err := compileBounded(pattern)
	if err != nil {
		return nil, cost{}, err
	}
	work := addWork(workOf(re.insts, regexpCompileStep), regexpWork(re.insts, len(s)+1))
	return re, cost{work: work}, nil
}

// regexpAllCost is the cost of a function that looks for up to n matches
// of pattern in s (all when n < 0): each may scan again as far as a match can
// reach, or to the end of s when a match can be arbitrarily long. Every match
// may be a result, so each is a unit.
func regexpAllCost(pattern, s string, n int) (*boundedRegexp, cost, error) {
	re, c, err := regexpOneCost(pattern, s)
	if err != nil {
		return nil, cost{}, err
	}
	matches := len(s) + 1
	if n >= 0 {
		matches = min(n, matches)
	}
	rescan := maxMatchLen(re.tree)
	if rescan < 0 || rescan > len(s) {
		rescan = len(s)
	}
	c.work = addWork(c.work, regexpWork(re.insts, mulCap(matches, rescan+1)))
	c.units = matches
	return re, c, nil
}

// The cost functions of the regular-expression functions, by their
// arguments: (regex, s), (regex, s, n).

func regexpMatchCost(args []reflect.Value) (cost, error) {
	_, c, err := regexpOneCost(args[0].String(), args[1].String())
	return c, err
}

func regexpFindAllCost(args []reflect.Value) (cost, error) {
	_, c, err := regexpAllCost(args[0].String(), args[1].String(), int(args[2].Int()))
	return c, err
}

// workScale multiplies every step of the cost model. It is 1, but for a
// binary slower than the one the steps were measured with: the fuzzer's,
// whose coverage instrumentation slows every function by a few times.
var workScale time.Duration = 1

// workOf is n steps of step each, saturating.
func workOf(n int, step time.Duration) time.Duration {
	step *= workScale
	if n > 0 && time.Duration(n) > math.MaxInt64/step {
		return math.MaxInt64
	}
	return time.Duration(n) * step
}

func addWork(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
