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

// costs are the cost functions of the Sprig functions whose result can be
// much larger than their arguments, which draw on the budget before running,
// and of those that could make a map contain itself, which refuse to. The
// builtin printf has its own, printfCost.
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
	"regexReplaceAll":            regexReplaceCost(false),
	"mustRegexReplaceAll":        regexReplaceCost(false),
	"regexReplaceAllLiteral":     regexReplaceCost(true),
	"mustRegexReplaceAllLiteral": regexReplaceCost(true),
}

// maxExpansion stops a cost computation early: no limit is larger.
const maxExpansion = 64 << 20

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
func acyclic(args []reflect.Value) (int, int, error) {
	dst := args[0]
	for dst.Kind() == reflect.Interface && !dst.IsNil() {
		dst = dst.Elem()
	}
	if dst.Kind() != reflect.Map || dst.IsNil() {
		return 0, 0, nil
	}
	nodes := 200_000
	for _, src := range args[1:] {
		ok, err := reaches(src, dst.Pointer(), &nodes)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			return 0, 0, fmt.Errorf("a map cannot contain itself")
		}
	}
	return 0, 0, nil
}

// repeat COUNT STRING spends COUNT units and builds COUNT times the string.
func repeatCost(args []reflect.Value) (int, int, error) {
	count, s := int(args[0].Int()), args[1].String()
	if count < 0 {
		return 0, 0, errNegativeCount
	}
	return count, mulCap(count, len(s)), nil
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

func untilCost(args []reflect.Value) (int, int, error) {
	count := int(args[0].Int())
	step := 1
	if count < 0 {
		step = -1
	}
	return stepCount(0, count, step), 0, nil
}

func untilStepCost(args []reflect.Value) (int, int, error) {
	return stepCount(int(args[0].Int()), int(args[1].Int()), int(args[2].Int())), 0, nil
}

// seqCost follows Sprig's seq: 1..END, START..END, or START..END by STEP.
func seqCost(args []reflect.Value) (int, int, error) {
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
	return n, mulCap(n, 21), nil
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
	return func(args []reflect.Value) (int, int, error) {
		spaces, s := int(args[0].Int()), args[1].String()
		if spaces < 0 {
			return 0, 0, errNegativeCount
		}
		lines := strings.Count(s, "\n") + 1
		return 0, addCap(len(s)+extra, mulCap(spaces, lines)), nil
	}
}

// replace OLD NEW SRC
func replaceCost(args []reflect.Value) (int, int, error) {
	old, repl, src := args[0].String(), args[1].String(), args[2].String()
	n := strings.Count(src, old)
	if old == "" {
		n = utf8.RuneCountInString(src) + 1
	}
	growth := max(len(repl)-len(old), 0)
	return 0, addCap(len(src), mulCap(n, growth)), nil
}

// wrapWith WIDTH SEP STRING breaks at spaces and inside words longer than WIDTH.
func wrapWithCost(args []reflect.Value) (int, int, error) {
	width, sep, s := int(args[0].Int()), args[1].String(), args[2].String()
	breaks := strings.Count(s, " ") + len(s)/max(width, 1) + 1
	return 0, addCap(len(s), mulCap(breaks, len(sep))), nil
}

// regexReplaceCost computes the exact size of a regular-expression
// replacement before it is built.
func regexReplaceCost(literal bool) costFunc {
	return func(args []reflect.Value) (int, int, error) {
		re, err := regexp.Compile(args[0].String())
		if err != nil {
			return 0, 0, err
		}
		s, repl := args[1].String(), args[2].String()
		refs := strings.Count(repl, "$")
		size := len(s)
		var buf []byte
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			n := len(repl)
			if !literal && refs > 0 {
				// Every reference expands to part of the match, so this
				// bounds the expansion before it is built.
				if addCap(len(repl), mulCap(refs, m[1]-m[0])) > maxExpansion {
					return 0, math.MaxInt, nil
				}
				buf = re.ExpandString(buf[:0], repl, s, m)
				n = len(buf)
			}
			size = addCap(size, n) - (m[1] - m[0])
			if size > maxExpansion {
				return 0, size, nil
			}
		}
		return 0, size, nil
	}
}

// printfCost bounds the padding a format asks for: the widths and
// precisions of its verbs, including those given by * arguments.
func printfCost(args []reflect.Value) (int, int, error) {
	f := &printfFormat{format: args[0].String(), args: args[1]}
	total := len(f.format)
	for ; f.i < len(f.format); f.i++ {
		if f.format[f.i] == '%' {
			total = addCap(total, f.verbPadding())
		}
	}
	return 0, total, nil
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
