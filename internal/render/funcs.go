package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// sprigAllowed are the Sprig v3 functions a template may call: those that are
// hermetic, deterministic and bounded (personas.md#functions). Left out: env, expandenv,
// getHostByName; every date and time function; every random function; the
// cryptographic, hashing and key-generation functions; the os* path
// functions, whose results depend on the platform; and slice, so that
// text/template's builtin slice keeps its meaning.
var sprigAllowed = []string{
	// strings
	"abbrev", "abbrevboth", "trunc", "trim", "upper", "title", "untitle", "substr", "repeat",
	"trimall", "trimAll", "trimSuffix", "trimPrefix", "nospace", "initials", "swapcase",
	"snakecase", "camelcase", "kebabcase", "wrap", "wrapWith", "hasSuffix", "squote", "cat",
	"indent", "nindent", "replace", "plural", "toString", "split", "splitList", "splitn",
	"toStrings", "join", "sortAlpha", "hello",
	// conversions and numbers
	"atoi", "int64", "int", "float64", "toDecimal", "seq", "until", "untilStep", "add1", "add",
	"sub", "div", "mod", "mul", "biggest", "max", "min", "maxf", "minf", "ceil", "floor",
	"round", "add1f", "addf", "subf", "divf", "mulf",
	// defaults and flow
	"default", "empty", "coalesce", "all", "any", "compact", "mustCompact", "ternary", "fail",
	// encodings
	"fromJson", "toJson", "toPrettyJson", "toRawJson", "mustFromJson", "mustToJson",
	"mustToPrettyJson", "mustToRawJson", "b64enc", "b64dec", "b32enc", "b32dec",
	// reflection
	"deepCopy", "mustDeepCopy", "typeOf", "typeIs", "typeIsLike", "kindOf", "kindIs", "deepEqual",
	// paths (forward-slash, the same on every platform)
	"base", "dir", "clean", "ext", "isAbs",
	// lists and dicts
	"tuple", "list", "dict", "get", "set", "unset", "hasKey", "pluck", "keys", "pick", "omit",
	"merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite", "values", "append",
	"mustAppend", "prepend", "mustPrepend", "first", "mustFirst", "rest", "mustRest", "last",
	"mustLast", "initial", "mustInitial", "reverse", "mustReverse", "uniq", "mustUniq",
	"without", "mustWithout", "has", "mustHas", "mustSlice", "concat", "dig", "chunk", "mustChunk",
	// versions, regular expressions, URLs
	"semver", "semverCompare", "regexMatch", "mustRegexMatch", "regexFindAll",
	"mustRegexFindAll", "regexFind", "mustRegexFind", "regexReplaceAll", "mustRegexReplaceAll",
	"regexReplaceAllLiteral", "mustRegexReplaceAllLiteral", "regexSplit", "mustRegexSplit",
	"regexQuoteMeta", "urlParse", "urlJoin",
}

// murmurFuncs are Murmur's five functions, with Murmur's argument order, as
// plain Go functions; the set has them bound to the budget (murmur), and
// they win over Sprig's functions of the same names.
var murmurFuncs = template.FuncMap{
	"quote":     strconv.Quote,
	"lower":     strings.ToLower,
	"trimSpace": strings.TrimSpace,
	"hasPrefix": strings.HasPrefix,
	"contains":  strings.Contains,
}

// murmur is Murmur's set bound to x's budget. Its functions are typed
// rather than guarded, being cheap and common: each charges its cost
// (budget_work.go) before it runs.
func (x *executor) murmur() template.FuncMap {
	text := func(name string, bytes int, s ...string) error {
		n := 0
		for _, a := range s {
			n += len(a)
		}
		return x.budget.charge(name, cost{bytes: bytes, work: linearWork(n, len(s))})
	}
	return template.FuncMap{
		"quote": func(s string) (string, error) {
			if err := text("quote", escapedSize(s)+2, s); err != nil {
				return "", err
			}
			return strconv.Quote(s), nil
		},
		"lower": func(s string) (string, error) {
			if err := text("lower", caseSize(s, false), s); err != nil {
				return "", err
			}
			return strings.ToLower(s), nil
		},
		"trimSpace": func(s string) (string, error) {
			if err := text("trimSpace", 0, s); err != nil {
				return "", err
			}
			return strings.TrimSpace(s), nil
		},
		"hasPrefix": func(s, prefix string) (bool, error) {
			if err := text("hasPrefix", 0, s, prefix); err != nil {
				return false, err
			}
			return strings.HasPrefix(s, prefix), nil
		},
		"contains": func(s, substr string) (bool, error) {
			if err := text("contains", 0, s, substr); err != nil {
				return false, err
			}
			return strings.Contains(s, substr), nil
		},
	}
}

// builtinOverrides are text/template builtins that can build large strings
// from many or large arguments; they run under the same guard as Sprig's.
// The comparisons and index, whose work grows with their arguments' size,
// charge the budget themselves (comparisons). Left to text/template: and, or,
// not, len, slice and call, whose work does not depend on their arguments'
// size.
var builtinOverrides = template.FuncMap{
	"print":    fmt.Sprint,
	"println":  fmt.Sprintln,
	"html":     template.HTMLEscaper,
	"js":       template.JSEscaper,
	"urlquery": template.URLQueryEscaper,
}

var sprigFuncs = sprig.TxtFuncMap()

// sprigReplaced are the Sprig functions the set implements itself, so that
// output never depends on map order.
var sprigReplaced = map[string]any{"keys": sortedKeys, "values": valuesByKey}

var (
	publicNamesOnce sync.Once
	publicNames     map[string]any
)

// publicFuncNames are the functions templates are parsed with: the names of
// an executor's set. (A func, not a sync.OnceValue variable: the set's
// include parses templates, which would make an initialization cycle.)
func publicFuncNames() map[string]any {
	publicNamesOnce.Do(func() {
		publicNames = map[string]any{}
		for name := range (&executor{}).funcMap() {
			publicNames[name] = true
		}
	})
	return publicNames
}

// funcMap is the function set of one executor, bound to its budget: every
// function but Murmur's and include runs through the guard (budget_guard.go);
// Murmur's charge the budget themselves, and include renders under it.
func (x *executor) funcMap() template.FuncMap {
	m := template.FuncMap{}
	for _, name := range sprigAllowed {
		fn, ok := sprigReplaced[name]
		if !ok {
			fn, ok = sprigFuncs[name]
		}
		if !ok {
			panic("sprig has no function " + name)
		}
		m[name] = x.guard(name, fn, costs[name])
	}
	for name, fn := range builtinOverrides {
		m[name] = x.guard(name, fn, builtinCosts[name])
	}
	m["printf"] = x.guard("printf", fmt.Sprintf, printfCost)
	maps.Copy(m, x.murmur())
	maps.Copy(m, x.comparisons())
	m["include"] = x.include
	return m
}

// sortedKeys is Sprig's keys, sorted, so that output never depends on map order.
func sortedKeys(dicts ...map[string]any) []string {
	var out []string
	for _, d := range dicts {
		out = slices.AppendSeq(out, maps.Keys(d))
	}
	slices.Sort(out)
	return out
}

// valuesByKey is Sprig's values, in the order of the sorted keys.
func valuesByKey(dict map[string]any) []any {
	out := make([]any, 0, len(dict))
	for _, k := range slices.Sorted(maps.Keys(dict)) {
		out = append(out, dict[k])
	}
	return out
}
