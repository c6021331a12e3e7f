package render

import (
	"math"
	"strings"
	"testing"
	"text/template"
	"time"
)

type builtinPoint struct{ X, Y int }

// builtinData holds a value of every kind a template can compare or index.
type builtinData struct {
	I     int
	I8    int8
	I64   int64
	MinI  int64
	U     uint
	U8    uint8
	U64   uint64
	MaxU  uint64
	F32   float32
	F64   float64
	C     complex128
	B     bool
	S     string
	S2    string
	Bytes []byte
	Nil   any
	Iface any
	IStr  any
	Ptr   *int
	Ptr2  *int
	NilP  *int
	St    builtinPoint
	St2   builtinPoint
	Arr   [3]string
	Slice []int
	NilSl []int
	Map   map[string]int
	MapI8 map[int8]string
	MapU  map[uint]string
	MapP  map[*int]int
	MapA  map[string]any
	Nest  map[string][]map[string]string
	PSl   *[]int
	Ch    chan int
	Fn    func() int
}

func newBuiltinData() builtinData {
	one, other := 1, 1
	sl := []int{10, 20, 30}
	return builtinData{
		I: 1, I8: -3, I64: 1, MinI: math.MinInt64, U: 1, U8: 255, U64: 7, MaxU: math.MaxUint64,
		F32: 1.5, F64: 1, C: 1 + 2i, B: true, S: "abc", S2: "abd", Bytes: []byte("abc"),
		Iface: 1, IStr: "abc", Ptr: &one, Ptr2: &other,
		St: builtinPoint{1, 2}, St2: builtinPoint{1, 2}, Arr: [3]string{"x", "y", "z"},
		Slice: sl, Map: map[string]int{"a": 1, "": 2}, MapI8: map[int8]string{44: "int8 key"},
		MapU: map[uint]string{3: "three"}, MapP: map[*int]int{nil: 9},
		MapA: map[string]any{"k": nil, "n": 5},
		Nest: map[string][]map[string]string{"a": {{"b": "deep"}}}, PSl: &sl,
		Ch: make(chan int), Fn: func() int { return 1 },
	}
}

// builtinOperands are the arguments the comparison cases combine: fields of
// every kind, literals of each constant kind, and nil.
var builtinOperands = []string{
	".I", ".I8", ".I64", ".MinI", ".U", ".U8", ".U64", ".MaxU", ".F32", ".F64", ".C", ".B",
	".S", ".S2", ".Bytes", ".Nil", ".Iface", ".IStr", ".Ptr", ".Ptr2", ".NilP", ".St", ".St2",
	".Arr", ".Slice", ".NilSl", ".Map", ".Ch", ".Fn",
	"1", "-1", "1.0", "1.5", "'a'", `"abc"`, "true", "nil", "1i",
	"(index .MapA \"k\")", "(index .MapA \"n\")",
}

// builtinCases are the calls whose output, or failure, must be that of
// text/template's builtins.
func builtinCases() []string {
	var cases []string
	for _, fn := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
		for _, a := range builtinOperands {
			for _, b := range builtinOperands {
				cases = append(cases, "{{ "+fn+" "+a+" "+b+" }}")
			}
		}
	}
	cases = append(cases,
		`{{ eq .I }}`, `{{ eq .I 2 3 1 }}`, `{{ eq .I 2 3 4 }}`, `{{ eq .I 1 "x" }}`,
		`{{ eq .I "x" 1 }}`, `{{ eq .S "x" "abc" }}`, `{{ eq nil nil .NilP }}`, `{{ eq .U8 255 -1 }}`,
		`{{ eq .MaxU -1 18446744073709551615 }}`, `{{ lt .MinI .MaxU }}`, `{{ gt .MaxU .MinI }}`,
		`{{ eq .St .St2 }}`, `{{ eq .Arr .Arr }}`, `{{ eq .Ptr .Ptr }}`,
	)
	for _, c := range []string{
		`.Slice 0`, `.Slice 2`, `.Slice 3`, `.Slice -1`, `.Slice .U8`, `.Slice .MaxU`, `.Slice "0"`,
		`.Slice nil`, `.Slice 1.0`, `.Arr 1`, `.Arr .U`, `.S 0`, `.S 3`, `.Bytes 1`, `.Map "a"`,
		`.Map ""`, `.Map "missing"`, `.Map 1`, `.Map nil`, `.MapI8 44`, `.MapI8 300`, `.MapI8 .U8`,
		`.MapU 3`, `.MapU -3`, `.MapU "3"`, `.MapP nil`, `.MapA "k"`, `.MapA "n"`, `.MapA "none"`,
		`.Nest "a" 0 "b"`, `.Nest "a" 1 "b"`, `.Nest "x" 0`, `.Nest "a" 0 "b" 0`, `.PSl 1`,
		`.NilP 0`, `.Nil 0`, `nil 0`, `.Iface 0`, `.I 0`, `.St 0`, `.Ch 0`, `.Slice`, `.Nil`,
		`.Iface`, `.Map "a" "b"`, `.MapA "n" 0`, `(list 1 (dict "a" 2)) 1 "a"`, `.Slice .Iface`,
		`.Slice .I8`,
	} {
		cases = append(cases, "{{ index "+c+" }}")
	}
	return cases
}

// differentErrors are the cases where both fail but with other words:
// text/template lets an index equal to the length through to reflect, which
// panics, and reads a uint index past MaxInt64 as negative.
var differentErrors = map[string]bool{
	`{{ index .Slice 3 }}`:        true,
	`{{ index .S 3 }}`:            true,
	`{{ index .Slice .MaxU }}`:    true,
	`{{ index .Nest "a" 1 "b" }}`: true,
	`{{ index .Nest "x" 0 }}`:     true,
}

// TestBuiltinsAsTextTemplate renders every case with text/template's
// builtins and with the set's, unguarded and guarded: the outputs must be
// the same, or all must fail, with the same error.
func TestBuiltinsAsTextTemplate(t *testing.T) {
	sprig := template.FuncMap{"list": sprigFuncs["list"], "dict": sprigFuncs["dict"]}
	x := newExecutor(NewEngine(DefaultLimits))
	guarded := x.funcMap()
	// The set's own comparisons and index, unbound from any budget.
	ours := template.FuncMap{"eq": templateEq, "ne": templateNe, "lt": templateLt, "le": templateLe,
		"gt": templateGt, "ge": templateGe, "index": templateIndex}
	data := newBuiltinData()
	run := func(src string, funcs ...template.FuncMap) (string, string) {
		tmpl := template.New("t").Funcs(sprig)
		for _, f := range funcs {
			tmpl = tmpl.Funcs(f)
		}
		tmpl, err := tmpl.Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var out strings.Builder
		if err := tmpl.Execute(&out, data); err != nil {
			return "", err.Error()
		}
		return out.String(), ""
	}
	errorsSeen := 0
	for _, src := range builtinCases() {
		want, wantErr := run(src)
		if wantErr != "" {
			errorsSeen++
		}
		for _, variant := range []struct {
			name  string
			funcs template.FuncMap
		}{{"ours", ours}, {"guarded", guarded}} {
			x.budget.reset(&DefaultLimits, time.Now(), time.Time{})
			got, gotErr := run(src, variant.funcs)
			switch {
			case (wantErr == "") != (gotErr == ""):
				t.Errorf("%s (%s): got %q, error %q; text/template: %q, error %q", src, variant.name, got, gotErr, want, wantErr)
			case got != want:
				t.Errorf("%s (%s): got %q, text/template %q", src, variant.name, got, want)
			case gotErr != wantErr && !differentErrors[src]:
				t.Errorf("%s (%s): error %q, text/template %q", src, variant.name, gotErr, wantErr)
			}
		}
	}
	// The cases must exercise both outcomes.
	if errorsSeen == 0 || errorsSeen == len(builtinCases()) {
		t.Errorf("%d of %d cases fail", errorsSeen, len(builtinCases()))
	}
}
