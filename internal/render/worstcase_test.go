package render

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Worst-case arguments, each as large as the limits let a template build
// them (personas.md#limits): strings of the output limit, lists of the unit
// limit, values nested to the depth limit.
const (
	// bigASCII is 900,000 bytes of letters.
	bigASCII = `{{ $s := repeat 1000 (repeat 900 "a") }}`
	// bigWords is 900,000 bytes of short words.
	bigWords = `{{ $s := repeat 1000 (repeat 90 "aB cD eF, ") }}`
	// bigEscapes is 900,000 bytes that escape and change case at most:
	// invalid UTF-8, markup and runes that grow in case.
	bigEscapes = `{{ $s := repeat 1000 (repeat 100 (printf "%s<\"&\x00\n%c" (b64dec "/w==") 0x250)) }}`
	// bigList is a list of 30,000 numbers.
	bigList = `{{ $l := until 30000 }}`
	// bigStrings is a list of 1,000 strings of 900 bytes.
	bigStrings = `{{ $l := initial (splitList "," (repeat 1000 (printf "%s," (repeat 900 "z")))) }}`
	// bigDict is a dict of 12,001 keys.
	bigDict = `{{ $d := fromJson (toJson (split "," (repeat 12000 "xy,"))) }}`
	// deepDict is a dict nested 99 levels, holding 900 KB.
	deepDict = `{{ $y := repeat 9000 "y" }}{{ $d := dict "x" $y }}{{ range until 98 }}{{ $d = dict "a" $d "b" $y }}{{ end }}`
	// twoBig are two strings of 900,001 bytes that differ in their last.
	twoBig = `{{ $a := printf "%sa" (repeat 899 (repeat 1000 "a")) }}{{ $b := printf "%sb" (repeat 899 (repeat 1000 "a")) }}`
)

// manyCalls is head, then a range of 64 iterations of as many copies of call
// as the source limit allows: calls that are cheap to write but each read
// their arguments whole.
func manyCalls(head, call string) string {
	head += `{{ range until 64 }}`
	n := (DefaultLimits.MaxSourceBytes - len(head) - len(`{{ end }}`)) / len(call)
	return head + strings.Repeat(call, n) + `{{ end }}`
}

// manyArgs is a call of fn with head's $a, then as many $b as the source
// limit allows, four times.
func manyArgs(head, fn string) string {
	head += `{{ range until 4 }}{{ if ` + fn + ` $a`
	tail := ` }}{{ end }}{{ end }}`
	n := (DefaultLimits.MaxSourceBytes - len(head) - len(tail)) / len(" $b")
	return head + strings.Repeat(" $b", n) + tail
}

// worstCases are the calls that make each function of the set as slow and
// as large as its arguments can; every name of the set must have a row.
var worstCases = map[string][]string{
	// strings
	"abbrev":     {bigASCII + `{{ abbrev 900000 $s }}`, bigASCII + `{{ abbrev 5 $s }}`},
	"abbrevboth": {bigASCII + `{{ abbrevboth 1 900000 $s }}`},
	"trunc":      {bigASCII + `{{ trunc -1 $s }}`},
	"trim":       {bigASCII + `{{ trim $s }}`},
	"upper":      {bigEscapes + `{{ upper $s }}`},
	"title":      {bigWords + `{{ title $s }}`, bigEscapes + `{{ title $s }}`},
	"untitle":    {bigWords + `{{ untitle $s }}`},
	"substr":     {bigASCII + `{{ substr 0 900000 $s }}`},
	"repeat":     {`{{ repeat 90000 "0123456789abcdef" }}`, `{{ repeat 99999 "" }}`},
	"trimall":    {bigASCII + `{{ trimall "a" $s }}`, bigASCII + `{{ trimall $s $s }}`},
	"trimAll":    {bigASCII + `{{ trimAll $s $s }}`},
	"trimSuffix": {bigASCII + `{{ trimSuffix $s $s }}`},
	"trimPrefix": {bigASCII + `{{ trimPrefix $s $s }}`},
	"nospace":    {bigWords + `{{ nospace $s }}`},
	"initials":   {bigWords + `{{ initials $s }}`},
	"swapcase":   {bigEscapes + `{{ swapcase $s }}`, bigWords + `{{ swapcase $s }}`},
	"snakecase":  {bigWords + `{{ snakecase $s }}`, bigEscapes + `{{ snakecase $s }}`},
	"camelcase":  {bigWords + `{{ camelcase $s }}`, bigEscapes + `{{ camelcase $s }}`},
	"kebabcase":  {bigWords + `{{ kebabcase $s }}`, bigEscapes + `{{ kebabcase $s }}`},
	"wrap":       {bigWords + `{{ wrap 1 $s }}`, bigASCII + `{{ wrap 1 $s }}`, bigWords + `{{ wrap 900000 $s }}`},
	"wrapWith":   {bigWords + `{{ wrapWith 1 "--------" $s }}`, bigASCII + `{{ wrapWith 2 "" $s }}`},
	"hasSuffix":  {bigASCII + `{{ hasSuffix $s $s }}`},
	"squote":     {bigASCII + `{{ squote $s $s }}`, bigList + `{{ squote $l }}`},
	"cat":        {bigASCII + `{{ cat $s $s }}`, bigList + `{{ cat $l $l }}`},
	"indent":     {bigWords + `{{ indent 1 $s }}`, `{{ indent 2000000000 "x" }}`},
	"nindent":    {`{{ $s := repeat 90000 "\n" }}{{ nindent 9 $s }}`},
	"replace":    {bigASCII + `{{ replace "a" "bb" $s }}`, bigASCII + `{{ replace "" "b" $s }}`},
	"plural":     {bigASCII + `{{ plural $s $s 2 }}`},
	"toString":   {deepDict + `{{ toString $d }}`, bigList + `{{ toString $l }}`},
	"split":      {bigASCII + `{{ split "" $s }}`, bigWords + `{{ split " " $s }}`},
	"splitList":  {bigASCII + `{{ splitList "" $s }}`, bigWords + `{{ splitList "," $s }}`},
	"splitn":     {bigASCII + `{{ splitn "" 2000000000 $s }}`, bigWords + `{{ splitn " " 90000 $s }}`},
	"toStrings":  {bigList + `{{ toStrings $l }}`, deepDict + `{{ toStrings (list $d $d) }}`},
	"join":       {bigList + `{{ join (repeat 90000 "-") $l }}`, bigStrings + `{{ join "," $l }}`},
	"sortAlpha":  {bigList + `{{ sortAlpha $l }}`, bigStrings + `{{ sortAlpha $l }}`},
	"hello":      {`{{ hello }}`},
	// conversions and numbers
	"atoi":      {bigASCII + `{{ atoi $s }}`},
	"int64":     {`{{ $s := repeat 90000 "9" }}{{ int64 $s }}`},
	"int":       {`{{ $s := repeat 90000 "9" }}{{ int $s }}`},
	"float64":   {`{{ $s := repeat 90000 "9" }}{{ float64 $s }}`},
	"toDecimal": {`{{ $s := repeat 90000 "7" }}{{ toDecimal $s }}`},
	"seq":       {`{{ seq 99000 }}`, `{{ seq -2000000000 2000000000 }}`},
	"until":     {`{{ until 99000 }}`},
	"untilStep": {`{{ untilStep 0 99000 1 }}`},
	"add1":      {`{{ add1 9223372036854775807 }}`},
	"add":       {bigList + `{{ add 1 2 3 }}`},
	"sub":       {`{{ sub 1 2 }}`},
	"div":       {`{{ div 1 0 }}`},
	"mod":       {`{{ mod 1 0 }}`},
	"mul":       {`{{ mul 9223372036854775807 9223372036854775807 }}`},
	"biggest":   {bigList + `{{ biggest 1 2 }}`},
	"max":       {`{{ max 1 2 3 4 5 6 7 8 9 }}`},
	"min":       {`{{ min 1 2 3 4 5 6 7 8 9 }}`},
	"maxf":      {`{{ maxf 1.5 2 3 }}`},
	"minf":      {`{{ minf 1.5 2 3 }}`},
	"ceil":      {`{{ ceil 1e308 }}`},
	"floor":     {`{{ floor -1e308 }}`},
	"round":     {`{{ round 1e308 300 }}`, `{{ round 1.5 2000000000 }}`},
	"add1f":     {`{{ add1f 1e308 }}`},
	"addf":      {`{{ addf 1e308 1e308 }}`},
	"subf":      {`{{ subf 1e308 1e308 }}`},
	"divf":      {`{{ divf 1 0 }}`},
	"mulf":      {`{{ mulf 1e308 1e308 }}`},
	// defaults and flow
	"default":     {deepDict + `{{ default $d $d }}`},
	"empty":       {deepDict + `{{ empty $d }}`},
	"coalesce":    {bigList + `{{ coalesce $l $l }}`},
	"all":         {bigList + `{{ all $l $l }}`},
	"any":         {bigList + `{{ any $l $l }}`},
	"compact":     {bigList + `{{ compact $l }}`},
	"mustCompact": {bigList + `{{ mustCompact $l }}`},
	"ternary":     {deepDict + `{{ ternary $d $d true }}`},
	"fail":        {bigASCII + `{{ fail $s }}`},
	// encodings
	"fromJson":         {`{{ $s := printf "[%s0]" (repeat 90000 "[],") }}{{ fromJson $s }}`, `{{ $s := cat (repeat 9000 "[") (repeat 9000 "]") }}{{ fromJson (nospace $s) }}`},
	"mustFromJson":     {`{{ $s := printf "{%s\"a\":0}" (repeat 60000 "\"a\":{},") }}{{ mustFromJson $s }}`},
	"toJson":           {bigEscapes + `{{ toJson $s }}`, deepDict + `{{ toJson $d }}`, bigDict + `{{ toJson $d }}`},
	"toPrettyJson":     {deepDict + `{{ toPrettyJson $d }}`, bigList + `{{ toPrettyJson $l }}`},
	"toRawJson":        {bigEscapes + `{{ toRawJson $s }}`},
	"mustToJson":       {bigEscapes + `{{ mustToJson $s }}`},
	"mustToPrettyJson": {deepDict + `{{ mustToPrettyJson $d }}`},
	"mustToRawJson":    {deepDict + `{{ mustToRawJson $d }}`},
	"b64enc":           {bigASCII + `{{ b64enc $s }}`},
	"b64dec":           {bigASCII + `{{ b64dec $s }}`},
	"b32enc":           {bigASCII + `{{ b32enc $s }}`},
	"b32dec":           {bigASCII + `{{ b32dec (upper $s) }}`},
	// reflection
	"deepCopy":     {deepDict + `{{ deepCopy $d }}`, bigDict + `{{ deepCopy $d }}`},
	"mustDeepCopy": {bigStrings + `{{ mustDeepCopy $l }}`},
	"typeOf":       {deepDict + `{{ typeOf $d }}`},
	"typeIs":       {deepDict + `{{ typeIs "map" $d }}`},
	"typeIsLike":   {deepDict + `{{ typeIsLike "map" $d }}`},
	"kindOf":       {deepDict + `{{ kindOf $d }}`},
	"kindIs":       {deepDict + `{{ kindIs "map" $d }}`},
	"deepEqual":    {deepDict + `{{ deepEqual $d $d }}`, bigDict + `{{ deepEqual $d (deepCopy $d) }}`},
	// paths
	"base":  {bigASCII + `{{ base $s }}`},
	"dir":   {`{{ $s := repeat 90000 "a/../" }}{{ dir $s }}`},
	"clean": {`{{ $s := repeat 90000 "a/../" }}{{ clean $s }}`},
	"ext":   {bigASCII + `{{ ext $s }}`},
	"isAbs": {bigASCII + `{{ isAbs $s }}`},
	// lists and dicts
	"tuple":              {bigList + `{{ tuple $l $l $l }}`},
	"list":               {bigStrings + `{{ list $l $l }}`},
	"dict":               {bigList + `{{ dict $l $l }}`},
	"get":                {bigDict + `{{ get $d "9" }}`},
	"set":                {bigDict + `{{ set $d "x" $d }}`, bigDict + `{{ set (dict) "x" $d }}`},
	"unset":              {bigDict + `{{ unset $d "9" }}`},
	"hasKey":             {bigDict + `{{ hasKey $d "9" }}`},
	"pluck":              {bigDict + `{{ pluck "_9" $d $d $d }}`},
	"keys":               {bigDict + `{{ keys $d $d }}`},
	"pick":               {bigDict + `{{ pick $d "1" "2" "3" }}`},
	"omit":               {bigDict + `{{ omit $d "1" "2" "3" }}`},
	"merge":              {deepDict + `{{ merge (dict) $d $d }}`, bigDict + `{{ merge (dict) $d $d }}`},
	"mergeOverwrite":     {deepDict + `{{ mergeOverwrite (dict) $d $d }}`},
	"mustMerge":          {bigDict + `{{ mustMerge (dict) $d }}`},
	"mustMergeOverwrite": {bigDict + `{{ mustMergeOverwrite (dict) $d }}`},
	"values":             {bigDict + `{{ values $d }}`},
	"append":             {bigList + `{{ append $l 1 }}`},
	"mustAppend":         {bigList + `{{ mustAppend $l 1 }}`},
	"prepend":            {bigList + `{{ prepend $l 1 }}`},
	"mustPrepend":        {bigList + `{{ mustPrepend $l 1 }}`},
	"first":              {bigList + `{{ first $l }}`},
	"mustFirst":          {bigList + `{{ mustFirst $l }}`},
	"rest":               {bigList + `{{ rest $l }}`},
	"mustRest":           {bigList + `{{ mustRest $l }}`},
	"last":               {bigList + `{{ last $l }}`},
	"mustLast":           {bigList + `{{ mustLast $l }}`},
	"initial":            {bigList + `{{ initial $l }}`},
	"mustInitial":        {bigList + `{{ mustInitial $l }}`},
	"reverse":            {bigList + `{{ reverse $l }}`},
	"mustReverse":        {bigList + `{{ mustReverse $l }}`},
	"uniq":               {`{{ len (uniq (until 20000)) }}`, bigStrings + `{{ uniq $l }}`, `{{ uniq (until 300) }}`, `{{ len (uniq (until 1400)) }}`},
	"mustUniq":           {bigList + `{{ mustUniq $l }}`},
	"without":            {bigList + `{{ without $l 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 }}`, bigList + `{{ without $l $l }}`},
	"mustWithout":        {bigStrings + `{{ mustWithout $l $l }}`},
	"has":                {bigList + `{{ has -1 $l }}`, bigStrings + `{{ has (repeat 900 "y") $l }}`},
	"mustHas":            {bigList + `{{ mustHas $l $l }}`},
	"mustSlice":          {bigList + `{{ mustSlice $l 1 }}`},
	"concat":             {bigList + `{{ concat $l $l }}`},
	"dig":                {deepDict + `{{ dig "a" "a" "a" "a" "x" "" $d }}`},
	"chunk":              {bigList + `{{ chunk 1 $l }}`, bigList + `{{ chunk 0 $l }}`},
	"mustChunk":          {bigList + `{{ mustChunk 1 $l }}`},
	// versions, regular expressions, URLs
	"semver":                     {bigASCII + `{{ semver $s }}`, `{{ $s := printf "1.2.3-%s" (repeat 90000 "a.") }}{{ semver $s }}`},
	"semverCompare":              {`{{ $s := repeat 90000 ">=1.0.0 " }}{{ semverCompare $s "1.0.0" }}`, `{{ $s := repeat 30000 "1 || " }}{{ semverCompare $s "1.0.0" }}`, `{{ $s := repeat 3000 ">=1.0.0 " }}{{ semverCompare $s "1.0.0" }}`},
	"regexMatch":                 {`{{ regexMatch (printf "%sk" (repeat 3000 "[a-j]")) (repeat 80000 "abcdefghij") }}`, `{{ regexMatch (repeat 3000 "(?:a{1000})") "b" }}`, `{{ regexMatch (printf "%sk" (repeat 300 "[a-j]")) (repeat 80000 "abcdefghij") }}`, `{{ regexMatch "(?:(?:a{100}){100}){100}" "a" }}`, `{{ regexMatch (printf "%sk" (repeat 30 "[a-j]")) (repeat 9000 "abcdefghij") }}`},
	"mustRegexMatch":             {`{{ mustRegexMatch (printf "%sk" (repeat 9000 "[a-j]")) (repeat 9000 "abcdefghij") }}`},
	"regexFindAll":               {`{{ regexFindAll "a(?:.*X)?" (repeat 90000 "a") -1 }}`, `{{ regexFindAll "a(?:.*X)?" (repeat 8000 "a") 100 }}`, `{{ regexFindAll "a" (repeat 90000 "a") 99 }}`},
	"mustRegexFindAll":           {`{{ mustRegexFindAll (repeat 2000 "[a-j]") (repeat 80000 "abcdefghij") -1 }}`},
	"regexFind":                  {`{{ regexFind (printf "%sk" (repeat 300 "[a-j]")) (repeat 80000 "abcdefghij") }}`},
	"mustRegexFind":              {`{{ mustRegexFind (printf "%sk" (repeat 30 "[a-j]")) (repeat 90000 "abcdefghij") }}`},
	"regexReplaceAll":            {`{{ regexReplaceAll "a(?:.*X)?" (repeat 10000 "a") "b" }}`, `{{ $s := repeat 2000 "ab" }}{{ regexReplaceAll "a" $s "` + strings.Repeat("$0", 3000) + `" }}`},
	"mustRegexReplaceAll":        {`{{ mustRegexReplaceAll "[a-j]{1,100}k" (repeat 9000 "abcdefghij") "$0" }}`},
	"regexReplaceAllLiteral":     {`{{ regexReplaceAllLiteral "a" (repeat 90000 "a") (repeat 100 "b") }}`},
	"mustRegexReplaceAllLiteral": {`{{ mustRegexReplaceAllLiteral "a*" (repeat 90000 "b") "c" }}`},
	"regexSplit":                 {`{{ regexSplit "a(?:.*X)?" (repeat 90000 "a") -1 }}`, `{{ regexSplit "" (repeat 90000 "a") 90000 }}`},
	"mustRegexSplit":             {`{{ mustRegexSplit "b*" (repeat 90000 "a") 99000 }}`},
	"regexQuoteMeta":             {bigEscapes + `{{ regexQuoteMeta $s }}`, `{{ $s := repeat 92160 "*+?()[]{}|" }}{{ regexQuoteMeta $s }}`},
	"urlParse":                   {bigASCII + `{{ urlParse $s }}`, `{{ $s := repeat 90000 "%41" }}{{ urlParse (cat "http://h/" $s) }}`},
	"urlJoin":                    {bigASCII + `{{ urlJoin (dict "host" $s "path" $s "query" $s "fragment" $s) }}`},
	// builtins the set overrides, and printf
	"print":    {bigASCII + `{{ print $s $s }}`, deepDict + `{{ print $d }}`},
	"println":  {bigList + `{{ println $l $l $l }}`},
	"html":     {bigEscapes + `{{ html $s }}`},
	"js":       {bigEscapes + `{{ js $s }}`},
	"urlquery": {bigEscapes + `{{ urlquery $s }}`},
	"eq":       {manyCalls(twoBig, `{{ if eq $a $b }}{{ end }}`), manyArgs(twoBig, "eq"), bigASCII + `{{ eq $s $s }}`},
	"ne":       {manyCalls(twoBig, `{{ if ne $a $b }}{{ end }}`)},
	"lt":       {manyCalls(twoBig, `{{ if lt $a $b }}{{ end }}`)},
	"le":       {manyCalls(twoBig, `{{ if le $b $a }}{{ end }}`)},
	"gt":       {manyCalls(twoBig, `{{ if gt $a $b }}{{ end }}`)},
	"ge":       {manyCalls(twoBig, `{{ if ge $a $b }}{{ end }}`)},
	"index":    {manyCalls(twoBig+`{{ $d := dict $a 1 }}`, `{{ index $d $b }}`), bigDict + `{{ index $d "9" }}`, bigList + `{{ index $l 29999 }}`},
	"printf":   {`{{ printf "%2000000000d" 1 }}`, deepDict + `{{ printf "%v %#v" $d $d }}`, bigASCII + `{{ printf "%q%x" $s $s }}`},
	// Murmur's
	"quote":     {bigEscapes + `{{ quote $s }}`},
	"lower":     {bigEscapes + `{{ lower $s }}`},
	"trimSpace": {bigWords + `{{ trimSpace $s }}`},
	"hasPrefix": {bigASCII + `{{ hasPrefix $s $s }}`},
	"contains":  {bigASCII + `{{ contains (printf "%sb" (repeat 900 "a")) $s }}`},
	// the set's own
	"include": {`{{ range until 1000 }}{{ include "heavy" . }}{{ end }}`},
}

// worstSlack is how far past the render's limit a render may end: one clock
// check, on a loaded machine.
const worstSlack = 50 * time.Millisecond

// renderTries is how many times a render over its time is run again before
// it counts: on a loaded machine (CI runs the packages in parallel on few
// cores) a render can be descheduled past any slack, whereas one that the
// budget does not bound is slow every time.
const renderTries = 3

// fastestRender runs render after a collection, up to renderTries times
// until it ends within limit, and returns the fastest run's wall time, its
// allocation and its error.
func fastestRender(limit time.Duration, render func() error) (time.Duration, uint64, error) {
	var (
		best  = time.Duration(math.MaxInt64)
		alloc uint64
		err   error
	)
	for range renderTries {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		e := render()
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		if elapsed < best {
			best, alloc, err = elapsed, after.TotalAlloc-before.TotalAlloc, e
		}
		if best <= limit {
			break
		}
	}
	return best, alloc, err
}

// renderOneExtension renders src as a persona's one extension, beside an
// included layer of 1,000 iterations, with fastestRender.
func renderOneExtension(e *Engine, src string, limit time.Duration) (time.Duration, uint64, error) {
	b := &Bundle{
		Version:    BundleVersion,
		Persona:    PersonaFields{Name: "p", Namespace: "ns", Harness: "claude"},
		Extensions: []Extension{{ID: "a", Origin: "persona/p", Template: src}},
		Includes:   map[string]string{"heavy": `{{ range until 1000 }}x{{ end }}`},
	}
	return fastestRender(limit, func() error {
		_, err := e.Render(b, "")
		return err
	})
}

// worstAlloc bounds what one render may allocate: a few times the output
// limit, the size its arguments and results are held to.
const worstAlloc = 64 << 20

// TestEveryFunctionWorstCase calls every function of the set with the
// arguments that make it slowest and largest: each render must fail with a
// LimitError or succeed, within the wall-time limit and worstAlloc.
func TestEveryFunctionWorstCase(t *testing.T) {
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range publicFuncNames() {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		if len(worstCases[name]) == 0 {
			t.Errorf("function %s has no worst case", name)
		}
	}
	for name := range worstCases {
		if _, ok := publicFuncNames()[name]; !ok {
			t.Errorf("worst case of %s, which is not in the set", name)
		}
	}
	e := NewEngine(DefaultLimits)
	for _, name := range names {
		for i, src := range worstCases[name] {
			t.Run(name, func(t *testing.T) {
				elapsed, alloc, err := renderOneExtension(e, src, DefaultLimits.MaxDuration+worstSlack)
				var limit *LimitError
				if err != nil && !errors.As(err, &limit) {
					// A function's own error (a bad argument) ends the
					// render too, within its bounds.
					t.Logf("case %d: not a limit: %.200s", i, err)
				}
				if elapsed > DefaultLimits.MaxDuration+worstSlack {
					t.Errorf("case %d took %s, over %s: %.300v", i, elapsed, DefaultLimits.MaxDuration+worstSlack, err)
				}
				if alloc > worstAlloc {
					t.Errorf("case %d allocated %d MiB, over %d MiB", i, alloc>>20, worstAlloc>>20)
				}
				t.Logf("%s case %d: %s, %d KiB: %.160v", name, i, elapsed.Round(time.Millisecond), alloc>>10, err)
			})
		}
	}
}
