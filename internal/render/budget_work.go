package render

import (
	"math/bits"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"
)

// The work of a call is charged as the time it can take at worst, measured
// on the functions of the set with their worst arguments
// (TestEveryFunctionWorstCase) and rounded up.
const (
	// byteStep is the time per byte of the arguments of a function that is
	// linear in them.
	byteStep = 4 * time.Nanosecond
	// runeStep is the time per byte of a function that maps every rune
	// through unicode tables (title, swapcase, snakecase, ...): about 20 ns
	// a byte of words at worst, with a margin.
	runeStep = 40 * time.Nanosecond
	// nodeStep is the time per value of the arguments (list element, map
	// entry): reflection, copying, comparing or printing it. mergeOverwrite,
	// deepCopy and deepEqual of a dict of 12,000 keys take about 2 µs a
	// value.
	nodeStep = 3 * time.Microsecond
	// compareStep is the time of comparing one byte, or one value, of a
	// list against another with reflect.DeepEqual, as uniq, without and has
	// do for every pair.
	// (uniq of 20,000 numbers took 19 s: 95 ns a pair, 4.75 ns per byte
	// of the measure's 10 per number.)
	compareStep = 10 * time.Nanosecond
)

// linearWork is the work of a function linear in its arguments, of size
// bytes and nodes values (see measure).
func linearWork(size, nodes int) time.Duration {
	return addWork(workOf(size, byteStep), workOf(nodes, nodeStep))
}

// sizeOf is the measured size and value count of v; the arguments are already
// measured within the limits, so this is bounded.
func sizeOf(v reflect.Value) (size, nodes int) {
	m := measure{maxDepth: 1 << 30, maxNodes: 1 << 30}
	_ = m.value(v, 0)
	return m.size, m.nodes
}

// elements is how many elements v has when it is a list, or 1.
func elements(v reflect.Value) int {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return v.Len()
	}
	return 1
}

// pairsCost is the cost of comparing every element of list with every value
// of others, which Sprig's uniq (list against itself), without and has do.
func pairsCost(list reflect.Value, others ...reflect.Value) cost {
	n := elements(list)
	size, _ := sizeOf(list)
	otherSize := size
	if len(others) > 0 {
		otherSize = 0
		for _, o := range others {
			s, _ := sizeOf(o)
			otherSize = addCap(otherSize, s)
		}
	}
	pairs := addCap(mulCap(n, otherSize), size)
	return cost{work: workOf(pairs, compareStep)}
}

func uniqCost(args []reflect.Value) (cost, error) { return pairsCost(args[0]), nil }

// without LIST OMIT...
func withoutCost(args []reflect.Value) (cost, error) { return pairsCost(args[0], args[1]), nil }

// has NEEDLE HAYSTACK
func hasCost(args []reflect.Value) (cost, error) { return pairsCost(args[1], args[0]), nil }

// sortAlpha LIST compares n log n pairs of strings.
func sortAlphaCost(args []reflect.Value) (cost, error) {
	n := elements(args[0])
	size, nodes := sizeOf(args[0])
	work := workOf(mulCap(size, bits.Len(uint(n))+1), compareStep)
	return cost{units: n, work: addWork(work, linearWork(size, nodes))}, nil
}

// pieces is how many pieces strings.SplitN(s, sep, n) makes.
func pieces(s, sep string, n int) int {
	count := strings.Count(s, sep) + 1
	if sep == "" {
		count = utf8.RuneCountInString(s)
	}
	if n >= 0 {
		return min(n, count)
	}
	return count
}

// split SEP S and splitList SEP S make a piece per separator, each a list
// element (or map entry).
func splitCost(args []reflect.Value) (cost, error) {
	return cost{units: pieces(args[1].String(), args[0].String(), -1)}, nil
}

// splitn SEP N S
func splitnCost(args []reflect.Value) (cost, error) {
	return cost{units: pieces(args[2].String(), args[0].String(), int(args[1].Int()))}, nil
}

// join SEP LIST prints every element and a separator between each two.
func joinCost(args []reflect.Value) (cost, error) {
	n := elements(args[1])
	size, _ := sizeOf(args[1])
	return cost{units: n, bytes: addCap(printedSize(size), mulCap(max(n-1, 0), len(args[0].String())))}, nil
}

// listUnits charges a unit per element of the list argument i, for the
// functions that make a new value per element (toStrings, chunk).
func listUnits(i int) costFunc {
	return func(args []reflect.Value) (cost, error) {
		return cost{units: elements(args[i])}, nil
	}
}

// printedSize bounds the text of a value of measured size: a number counts
// nodeOverhead in the measure but prints as up to 24 characters.
func printedSize(size int) int { return mulCap(size, 3) }

// fromJson S makes a value per JSON value of S, and each value is at most
// one of these bytes after another; decoding one costs as much as any other
// function's handling of a value.
func fromJSONCost(args []reflect.Value) (cost, error) {
	s := args[0].String()
	values := 1
	for _, c := range []byte(s) {
		if c == ',' || c == '[' || c == '{' || c == ':' {
			values++
		}
	}
	return cost{units: values, work: workOf(values, nodeStep)}, nil
}

// toJSONCost bounds the encoding of the value: every byte of its strings may
// be escaped as \u00XX, every number takes 24 characters, and an indented
// encoding indents every value by its depth.
func toJSONCost(args []reflect.Value) (cost, error) {
	return cost{bytes: jsonSize(args[0], 0)}, nil
}

func jsonSize(v reflect.Value, depth int) int {
	// The punctuation of a value: quotes, colon, comma, newline and, in an
	// indented encoding, its indentation.
	size := addCap(4, 2*depth)
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			return jsonSize(v.Elem(), depth)
		}
	case reflect.String:
		return addCap(size, escapedSize(v.String()))
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return addCap(size, mulCap(v.Len(), 2)) // base64
		}
		for i := range v.Len() {
			size = addCap(size, jsonSize(v.Index(i), depth+1))
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			size = addCap(size, addCap(jsonSize(it.Key(), depth+1), jsonSize(it.Value(), depth+1)))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			size = addCap(size, addCap(4+len(v.Type().Field(i).Name), jsonSize(v.Field(i), depth+1)))
		}
	default:
		size = addCap(size, 24) // a number, true, false or null
	}
	return size
}

// escapedSize bounds s escaped for JSON, JavaScript or HTML: a printable
// ASCII byte may take 6 bytes (\u003c, &#34;), any other byte 6 as well.
func escapedSize(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x80 || strings.IndexByte(`"\<>&'+=`, c) >= 0 {
			n += 5
		}
	}
	return n
}

// escapeCost is the cost of html and js, which escape their string
// arguments: the size of the arguments escaped.
func escapeCost(args []reflect.Value) (cost, error) {
	return cost{bytes: argsText(args, escapedSize)}, nil
}

// growthCost bounds a function whose result is at most factor times its
// arguments' text: urlquery (%XX per byte), regexQuoteMeta (a backslash per
// byte).
func growthCost(factor int) costFunc {
	return func(args []reflect.Value) (cost, error) {
		return cost{bytes: mulCap(argsText(args, byteLen), factor)}, nil
	}
}

// argsText is argText summed over args.
func argsText(args []reflect.Value, f func(string) int) int {
	n := 0
	for _, a := range args {
		n = addCap(n, argText(a, f))
	}
	return n
}

// byteLen is a string's length, for argText.
func byteLen(s string) int { return len(s) }

// argText sums f over the strings in a, and the printed size of what is not
// a string.
func argText(a reflect.Value, f func(string) int) int {
	for a.Kind() == reflect.Interface && !a.IsNil() {
		a = a.Elem()
	}
	switch a.Kind() {
	case reflect.String:
		return f(a.String())
	case reflect.Slice:
		if a.Type().Elem().Kind() != reflect.Uint8 {
			n := 0
			for i := range a.Len() {
				n = addCap(n, addCap(argText(a.Index(i), f), 1))
			}
			return n
		}
	}
	size, _ := sizeOf(a)
	return printedSize(size)
}

// caseSize bounds s with its case changed, and a separator inserted before
// each byte (snakecase, kebabcase): an invalid byte becomes U+FFFD, three
// bytes, and a rune never grows by more than half.
func caseSize(s string, separators bool) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			n += 2
		}
	}
	if separators {
		n += len(s)
	}
	return n
}

// caseCost is the cost of the case functions on their last argument.
func caseCost(separators bool) costFunc {
	return func(args []reflect.Value) (cost, error) {
		last := args[len(args)-1]
		return cost{
			bytes: argText(last, func(s string) int { return caseSize(s, separators) }),
			work:  workOf(argText(last, byteLen), runeStep),
		}, nil
	}
}

// runeCost is the cost of the functions that read their strings rune by
// rune, results no larger than their arguments.
func runeCost(args []reflect.Value) (cost, error) {
	return cost{work: workOf(argsText(args, byteLen), runeStep)}, nil
}

// b64enc and b32enc grow their input by 4/3 and 8/5.
func encodingCost(num, den int) costFunc {
	return func(args []reflect.Value) (cost, error) {
		n := len(args[0].String())
		return cost{bytes: mulCap((n+den-1)/den, num)}, nil
	}
}

// wrap WIDTH S is wrapWith WIDTH "\n" S.
func wrapCost(args []reflect.Value) (cost, error) {
	return wrapWithCost([]reflect.Value{args[0], reflect.ValueOf("\n"), args[1]})
}

// printCost bounds print and println: the printed size of their arguments.
func printCost(args []reflect.Value) (cost, error) {
	return cost{bytes: argsText(args, func(s string) int { return len(s) + 1 })}, nil
}

// semverStep is the time per byte of semver and semverCompare, which match
// their arguments against the semver library's regular expressions and
// allocate as they go: a constraint of 720 KB took 1.6 s, and one of 60 KB
// 470 ms under the fuzzer's coverage instrumentation.
const semverStep = 8 * time.Microsecond

func semverCost(args []reflect.Value) (cost, error) {
	n := 0
	for _, a := range args {
		n = addCap(n, len(a.String()))
	}
	return cost{work: workOf(n, semverStep)}, nil
}
