package render

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"
)

// costs are the cost functions of the functions whose cost is more than
// linear in their arguments' size, or whose result can be much larger than
// their arguments, and of those that could make a map contain itself, which
// refuse to. Every other function of the set costs linearWork.
// personas.md#functions lists them.
var costs = map[string]costFunc{
	"set":                        acyclic,
	"merge":                      acyclic,
	"mergeOverwrite":             acyclic,
	"mustMerge":                  acyclic,
	"mustMergeOverwrite":         acyclic,
	"repeat":                     repeatCost,
	"until":                      untilCost,
	"untilStep":                  untilStepCost,
	"seq":                        seqCost,
	"indent":                     indentCost(0),
	"nindent":                    indentCost(1),
	"replace":                    replaceCost,
	"wrapWith":                   wrapWithCost,
	"wrap":                       wrapCost,
	"regexReplaceAll":            regexReplaceCost(false),
	"mustRegexReplaceAll":        regexReplaceCost(false),
	"regexReplaceAllLiteral":     regexReplaceCost(true),
	"mustRegexReplaceAllLiteral": regexReplaceCost(true),
	"regexMatch":                 regexpMatchCost,
	"mustRegexMatch":             regexpMatchCost,
	"regexFind":                  regexpMatchCost,
	"mustRegexFind":              regexpMatchCost,
	"regexFindAll":               regexpFindAllCost,
	"mustRegexFindAll":           regexpFindAllCost,
	"regexSplit":                 regexpFindAllCost,
	"mustRegexSplit":             regexpFindAllCost,
	"regexQuoteMeta":             growthCost(2),
	"uniq":                       uniqCost,
	"mustUniq":                   uniqCost,
	"without":                    withoutCost,
	"mustWithout":                withoutCost,
	"has":                        hasCost,
	"mustHas":                    hasCost,
	"sortAlpha":                  sortAlphaCost,
	"split":                      splitCost,
	"splitList":                  splitCost,
	"splitn":                     splitnCost,
	"join":                       joinCost,
	"toStrings":                  listUnits(0),
	"chunk":                      listUnits(1),
	"mustChunk":                  listUnits(1),
	"fromJson":                   fromJSONCost,
	"mustFromJson":               fromJSONCost,
	"toJson":                     toJSONCost,
	"mustToJson":                 toJSONCost,
	"toPrettyJson":               toJSONCost,
	"mustToPrettyJson":           toJSONCost,
	"toRawJson":                  toJSONCost,
	"mustToRawJson":              toJSONCost,
	"b64enc":                     encodingCost(4, 3),
	"b32enc":                     encodingCost(8, 5),
	"upper":                      caseCost(false),
	"title":                      caseCost(false),
	"untitle":                    caseCost(false),
	"swapcase":                   caseCost(false),
	"camelcase":                  caseCost(false),
	"snakecase":                  caseCost(true),
	"kebabcase":                  caseCost(true),
	"initials":                   caseCost(false),
	"nospace":                    caseCost(false),
	"trim":                       runeCost,
	"trimall":                    runeCost,
	"trimAll":                    runeCost,
	"abbrev":                     runeCost,
	"abbrevboth":                 runeCost,
	"trunc":                      runeCost,
	"substr":                     runeCost,
	"squote":                     printCost,
	"cat":                        printCost,
	"toString":                   printCost,
	"semver":                     semverCost,
	"semverCompare":              semverCost,
}

// builtinCosts are the costs of the text/template builtins the set
// overrides (builtinOverrides).
var builtinCosts = map[string]costFunc{
	"print":    printCost,
	"println":  printCost,
	"html":     escapeCost,
	"js":       escapeCost,
	"urlquery": growthCost(3),
}

var errNegativeCount = errors.New("a count must not be negative")

// mulCap multiplies non-negative sizes, saturating instead of overflowing.
func mulCap(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

func addCap(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// acyclic refuses set and merge calls that would make a map contain itself
// (see reaches).
func acyclic(args []reflect.Value) (cost, error) {
	dst := args[0]
	for dst.Kind() == reflect.Interface && !dst.IsNil() {
		dst = dst.Elem()
	}
	if dst.Kind() != reflect.Map || dst.IsNil() {
		return cost{}, nil
	}
	nodes := 200_000
	for _, src := range args[1:] {
		ok, err := reaches(src, dst.Pointer(), &nodes)
		if err != nil {
			return cost{}, err
		}
		if ok {
			return cost{}, fmt.Errorf("a map cannot contain itself")
		}
	}
	return cost{}, nil
}

// repeat COUNT STRING spends COUNT units and builds COUNT times the string.
func repeatCost(args []reflect.Value) (cost, error) {
	count, s := int(args[0].Int()), args[1].String()
	if count < 0 {
		return cost{}, errNegativeCount
	}
	return cost{units: count, bytes: mulCap(count, len(s))}, nil
}

// stepCount is how many elements Sprig's untilStep(start, stop, step) makes.
func stepCount(start, stop, step int) int {
	var span, stride uint64
	switch {
	case step > 0 && stop > start:
		span, stride = uint64(stop)-uint64(start), uint64(step)
	case step < 0 && stop < start:
		span, stride = uint64(start)-uint64(stop), -uint64(step)
	default:
		return 0
	}
	n := (span-1)/stride + 1
	if n > math.MaxInt {
		return math.MaxInt
	}
	return int(n)
}

func untilCost(args []reflect.Value) (cost, error) {
	count := int(args[0].Int())
	step := 1
	if count < 0 {
		step = -1
	}
	return cost{units: stepCount(0, count, step)}, nil
}

func untilStepCost(args []reflect.Value) (cost, error) {
	return cost{units: stepCount(int(args[0].Int()), int(args[1].Int()), int(args[2].Int()))}, nil
}

// seqCost follows Sprig's seq: 1..END, START..END, or START..END by STEP.
func seqCost(args []reflect.Value) (cost, error) {
	p := args[0] // the variadic ...int
	at := func(i int) int { return int(p.Index(i).Int()) }
	var n int
	switch p.Len() {
	case 1:
		n = stepCount(1, saturatingStep(at(0), 1), direction(1, at(0)))
	case 2:
		n = stepCount(at(0), saturatingStep(at(1), direction(at(0), at(1))), direction(at(0), at(1)))
	case 3:
		n = stepCount(at(0), saturatingStep(at(2), direction(at(0), at(2))), at(1))
	}
	// Each number prints as at most 20 digits and a space.
	return cost{units: n, bytes: mulCap(n, 21)}, nil
}

func direction(from, to int) int {
	if to < from {
		return -1
	}
	return 1
}

func saturatingStep(v, d int) int {
	if (d > 0 && v == math.MaxInt) || (d < 0 && v == math.MinInt) {
		return v
	}
	return v + d
}

// indent N S pads every line of S with N spaces.
func indentCost(extra int) costFunc {
	return func(args []reflect.Value) (cost, error) {
		spaces, s := int(args[0].Int()), args[1].String()
		if spaces < 0 {
			return cost{}, errNegativeCount
		}
		lines := strings.Count(s, "\n") + 1
		return cost{bytes: addCap(len(s)+extra, mulCap(spaces, lines))}, nil
	}
}

// replace OLD NEW SRC
func replaceCost(args []reflect.Value) (cost, error) {
	old, repl, src := args[0].String(), args[1].String(), args[2].String()
	n := strings.Count(src, old)
	if old == "" {
		n = utf8.RuneCountInString(src) + 1
	}
	growth := max(len(repl)-len(old), 0)
	return cost{bytes: addCap(len(src), mulCap(n, growth))}, nil
}

// wrapWith WIDTH SEP STRING breaks at spaces and inside words longer than WIDTH.
func wrapWithCost(args []reflect.Value) (cost, error) {
	width, sep, s := int(args[0].Int()), args[1].String(), args[2].String()
	breaks := strings.Count(s, " ") + len(s)/max(width, 1) + 1
	return cost{bytes: addCap(len(s), mulCap(breaks, len(sep))), work: workOf(len(s), runeStep)}, nil
}

// regexReplaceCost charges a regular-expression replacement as the matches
// it runs twice (once to size the result, once to build it), and computes the
// exact size of the result, once that work is known to fit, before it is
// built.
func regexReplaceCost(literal bool) costFunc {
	return func(args []reflect.Value) (cost, error) {
		pattern, s, repl := args[0].String(), args[1].String(), args[2].String()
		re, c, err := regexpAllCost(pattern, s, -1)
		if err != nil {
			return cost{}, err
		}
		c.work = addWork(c.work, linearWork(mulCap(c.units, len(repl)), 0))
		c.units = 0 // the result is one string, bounded by its size
		c.work = addWork(c.work, c.work)
		c.sized = func(limit int) int { return replacedSize(re.regexp(), s, repl, literal, limit) }
		return c, nil
	}
}

// replacedSize is the size of re's replacement of every match in s by repl,
// or more than limit once it is known to be more.
func replacedSize(re *regexp.Regexp, s, repl string, literal bool, limit int) int {
	refs := strings.Count(repl, "$")
	size := len(s)
	var buf []byte
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		n := len(repl)
		if !literal && refs > 0 {
			// Every reference expands to part of the match, so this
			// bounds the expansion before it is built.
			if addCap(len(repl), mulCap(refs, m[1]-m[0])) > limit {
				return math.MaxInt
			}
			buf = re.ExpandString(buf[:0], repl, s, m)
			n = len(buf)
		}
		size = addCap(size, n) - (m[1] - m[0])
		if size-len(s) > limit {
			return size
		}
	}
	return size
}

// printfCost bounds the padding a format asks for: the widths and
// precisions of its verbs, including those given by * arguments.
func printfCost(args []reflect.Value) (cost, error) {
	f := &printfFormat{format: args[0].String(), args: args[1]}
	total := addCap(len(f.format), argText(args[1], byteLen))
	for ; f.i < len(f.format); f.i++ {
		if f.format[f.i] == '%' {
			total = addCap(total, f.verbPadding())
		}
	}
	return cost{bytes: total}, nil
}

// printfFormat reads a printf format the way fmt does, far enough to find
// the padding of each verb and the argument each * takes.
type printfFormat struct {
	format string
	args   reflect.Value // the variadic ...any
	i      int           // the byte being read
	next   int           // the argument the next verb or * takes
}

// verbPadding reads the verb whose '%' is at i and returns the larger of its
// width and precision. It leaves i at the verb's letter.
func (f *printfFormat) verbPadding() int {
	f.i++
	for f.i < len(f.format) && strings.IndexByte("+-# 0", f.format[f.i]) >= 0 {
		f.i++
	}
	pad := f.number()
	if f.at('.') {
		f.i++
		pad = max(pad, f.number())
	}
	f.argIndex()
	if f.i < len(f.format) && f.format[f.i] != '%' {
		f.next++
	}
	return pad
}

func (f *printfFormat) at(c byte) bool { return f.i < len(f.format) && f.format[f.i] == c }

// argIndex reads an explicit argument index [n], which sets the argument
// the next * or verb takes.
func (f *printfFormat) argIndex() {
	if !f.at('[') {
		return
	}
	if j := strings.IndexByte(f.format[f.i:], ']'); j > 0 {
		if n, err := parseDigits(f.format[f.i+1 : f.i+j]); err == nil {
			f.next = n - 1
		}
		f.i += j + 1
	}
}

// number reads a width or precision: digits, *, or [n]*; 0 when there is none.
func (f *printfFormat) number() int {
	f.argIndex()
	if f.at('*') {
		n := f.intArg(f.next)
		f.next++
		f.i++
		return abs(n)
	}
	start := f.i
	for f.i < len(f.format) && f.format[f.i] >= '0' && f.format[f.i] <= '9' {
		f.i++
	}
	if f.i == start {
		return 0
	}
	n, err := parseDigits(f.format[start:f.i])
	if err != nil {
		return math.MaxInt
	}
	return n
}

// intArg is argument i when it is an integer, and 0 otherwise, as when there
// is no argument i.
func (f *printfFormat) intArg(i int) int {
	if i < 0 || i >= f.args.Len() {
		return 0
	}
	v := f.args.Index(i)
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() > math.MaxInt32 {
			return math.MaxInt
		}
		return int(v.Uint())
	}
	return 0
}

func abs(n int) int {
	if n < 0 {
		if n == math.MinInt {
			return math.MaxInt
		}
		return -n
	}
	return n
}

func parseDigits(s string) (int, error) {
	n := 0
	if s == "" {
		return 0, fmt.Errorf("no digits")
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a number: %q", s)
		}
		if n > (math.MaxInt-9)/10 {
			return math.MaxInt, nil
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}
