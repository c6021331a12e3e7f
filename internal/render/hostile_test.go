package render_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/persona-operator/persona-operator/internal/render"
)

// hostileCase is a template built to exhaust the controller; it must fail
// with an error naming the limit it hit (personas.md#limits).
type hostileCase struct {
	name  string
	tmpl  string
	setup func(b *render.Bundle)
	// want is a substring of the error: the limit's wording.
	want string
}

const (
	unitsLimit  = "limit of 100000 loop iterations, template calls and list elements"
	outputLimit = "over the limit of 921600 bytes"
	sourceLimit = "over the limit of 65536 bytes"
	timeLimit   = "longer than the limit of 250ms"
)

// twoLong are two strings of 900,001 bytes that differ in their last.
const twoLong = `{{ $a := printf "%sa" (repeat 899 (repeat 1000 "a")) }}{{ $b := printf "%sb" (repeat 899 (repeat 1000 "a")) }}`

// longVars sets the vars a and b to twoLong's strings, which a template
// then reads without a call.
func longVars(b *render.Bundle) {
	long := strings.Repeat("a", 900_000)
	b.Vars = map[string]string{"a": long + "a", "b": long + "b"}
}

// manyCallsOf is head, then a range of 64 iterations of as many copies of
// call as the source limit allows.
func manyCallsOf(head, call string) string {
	head += `{{ range until 64 }}`
	n := (64<<10 - len(head) - len(`{{ end }}`)) / len(call)
	return head + strings.Repeat(call, n) + `{{ end }}`
}

func hostileCorpus() []hostileCase {
	thousandRepos := func(b *render.Bundle) {
		b.Context.Repos = make([]render.Repo, 1000)
	}
	return []hostileCase{
		{name: "range over 2000000000", tmpl: `{{ range 2000000000 }}{{ end }}`, want: unitsLimit},
		{name: "range with else over 2000000000", tmpl: `{{ range $i := 2000000000 }}{{ $i }}{{ else }}none{{ end }}`, want: unitsLimit},
		{name: "repeat huge count", tmpl: `{{ repeat 2000000000 "x" }}`, want: unitsLimit},
		{name: "repeat huge string", tmpl: `{{ repeat 90000 "0123456789abcdef" }}`, want: outputLimit},
		{name: "until huge", tmpl: `{{ until 2000000000 }}`, want: unitsLimit},
		{name: "untilStep huge", tmpl: `{{ untilStep 0 2000000000 1 }}`, want: unitsLimit},
		{name: "untilStep extremes", tmpl: `{{ untilStep -9223372036854775808 9223372036854775807 1 }}`, want: unitsLimit},
		{name: "seq huge", tmpl: `{{ seq 2000000000 }}`, want: unitsLimit},
		{name: "seq huge range", tmpl: `{{ seq -2000000000 2000000000 }}`, want: unitsLimit},
		{name: "self-recursive define, twice per level", tmpl: `{{ define "r" }}{{ template "r" . }}{{ template "r" . }}{{ end }}{{ template "r" . }}`, want: "render budget exceeded"},
		{name: "recursive define with shallow depth", tmpl: `{{ define "r" }}{{ if lt (len .) 5 }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ template "r" (append . 1) }}{{ end }}{{ end }}{{ template "r" list }}`, want: unitsLimit},
		{name: "recursion into the main template", tmpl: `x{{ template "extension.a" . }}`, want: "render budget exceeded"},
		{name: "printf huge width", tmpl: `{{ printf "%2000000000d" 1 }}`, want: outputLimit},
		{name: "printf huge star width", tmpl: `{{ printf "%*d" 2000000000 1 }}`, want: outputLimit},
		{name: "printf huge precision", tmpl: `{{ printf "%.2000000000f" 1.5 }}`, want: outputLimit},
		{name: "printf many wide verbs", tmpl: `{{ printf "` + strings.Repeat("%900000d", 2000) + `" }}`, want: outputLimit},
		{name: "three nested ranges over 1000 elements", tmpl: `{{ $l := until 1000 }}{{ range $l }}{{ range $l }}{{ range $l }}x{{ end }}{{ end }}{{ end }}`, want: unitsLimit},
		{name: "three nested ranges over 1000 repos", tmpl: `{{ range .Repos }}{{ range $.Repos }}{{ range $.Repos }}x{{ end }}{{ end }}{{ end }}`, setup: thousandRepos, want: unitsLimit},
		{name: "output over 900 KiB", tmpl: `{{ $s := repeat 1000 "xxxxxxxxxx" }}{{ range until 100 }}{{ $s }}{{ end }}`, want: outputLimit},
		{name: "output over 900 KiB of literal text", tmpl: `{{ range until 20 }}` + strings.Repeat("y", 60000) + `{{ end }}`, want: outputLimit},
		{name: "include cycle", tmpl: `{{ include "a" . }}`, setup: func(b *render.Bundle) {
			b.Includes = map[string]string{"a": `{{ include "b" . }}`, "b": `{{ include "a" . }}`}
		}, want: "include cycle: a -> b -> a"},
		{name: "source over 64 KiB", tmpl: strings.Repeat("z", 64<<10+1), want: sourceLimit},
		{name: "20000 nested ifs", tmpl: strings.Repeat("{{if 1}}", 20000) + strings.Repeat("{{end}}", 20000), want: sourceLimit},
		{name: "string doubling with cat", tmpl: `{{ $s := "xxxxxxxxxxxxxxxx" }}` + strings.Repeat(`{{ $s = cat $s $s }}`, 40) + `{{ len $s }}`, want: "over the limit of"},
		{name: "string doubling with print", tmpl: `{{ $s := "xxxxxxxxxxxxxxxx" }}` + strings.Repeat(`{{ $s = print $s $s }}`, 40) + `{{ len $s }}`, want: "over the limit of"},
		{name: "many arguments of a large string", tmpl: `{{ $s := repeat 10000 "0123456789" }}{{ cat` + strings.Repeat(" $s", 5000) + ` }}`, want: "over the limit of"},
		{name: "list doubling with concat", tmpl: `{{ $l := list 1 2 3 4 }}` + strings.Repeat(`{{ $l = concat $l $l }}`, 40) + `{{ len $l }}`, want: "render budget exceeded"},
		{name: "replace growth", tmpl: `{{ $s := "aaaa" }}` + strings.Repeat(`{{ $s = replace "a" "aaaaaaaaaa" $s }}`, 12) + `{{ len $s }}`, want: outputLimit},
		{name: "regexReplaceAll expansion", tmpl: `{{ $s := repeat 2000 "ab" }}{{ regexReplaceAll "a" $s "` + strings.Repeat("$0", 3000) + `" }}`, want: outputLimit},
		{name: "regexReplaceAll whole-match expansion", tmpl: `{{ $s := repeat 50000 "ab" }}{{ regexReplaceAll ".*" $s "$0$0$0$0$0$0$0$0$0$0" }}`, want: outputLimit},
		{name: "indent huge", tmpl: `{{ indent 2000000000 "x" }}`, want: outputLimit},
		{name: "nindent many lines", tmpl: `{{ $s := repeat 50000 "\n" }}{{ nindent 100 $s }}`, want: outputLimit},
		{name: "wrapWith long separator", tmpl: `{{ $s := repeat 9000 "a b " }}{{ wrapWith 1 "` + strings.Repeat("-", 1000) + `" $s }}`, want: outputLimit},
		{name: "map containing itself", tmpl: `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ printf "%v" $d }}`, want: "a map cannot contain itself"},
		{name: "map containing itself through a list", tmpl: `{{ $d := dict }}{{ $e := dict "l" (list $d) }}{{ $_ := merge $d $e }}{{ toJson $d }}`, want: "a map cannot contain itself"},
		{name: "deeply nested dicts", tmpl: `{{ $d := dict }}{{ range until 5000 }}{{ $d = dict "a" $d }}{{ end }}{{ toPrettyJson $d }}`, want: "nested deeper than the limit"},
		{name: "deeply nested JSON", tmpl: `{{ $s := cat (repeat 9000 "[") (repeat 9000 "]") }}{{ $v := fromJson (nospace $s) }}{{ toJson $v }}`, want: "nested deeper than the limit"},
		{name: "wall time", tmpl: `{{ $s := repeat 20000 "aaaaa" }}{{ range until 30000 }}{{ regexMatch "a*b" $s }}{{ end }}`, want: timeLimit},
		{name: "regexMatch of a long program over a long input", tmpl: `{{ regexMatch (printf "%sk" (repeat 3000 "[a-j]")) (repeat 80000 "abcdefghij") }}`, want: timeLimit},
		{name: "regexMatch of nested counted repeats", tmpl: `{{ regexMatch (repeat 3000 "(?:a{1000})") "b" }}`, want: "a regular expression of more than 100000 instructions, over the limit of 10000"},
		{name: "regexFindAll rescanning the rest of the input", tmpl: `{{ regexFindAll "a(?:.*X)?" (repeat 90000 "a") 1000 }}`, want: timeLimit},
		{name: "regexFindAll of every match", tmpl: `{{ regexFindAll "a" (repeat 1000 (repeat 900 "a")) -1 }}`, want: unitsLimit},
		{name: "uniq of 20000", tmpl: `{{ len (uniq (until 20000)) }}`, want: timeLimit},
		{name: "without of a list against itself", tmpl: `{{ $l := until 20000 }}{{ without $l $l }}`, want: timeLimit},
		{name: "join with a long separator", tmpl: `{{ join (repeat 90000 "-") (until 1000) }}`, want: outputLimit},
		{name: "split into runes", tmpl: `{{ $s := repeat 1000 (repeat 900 "a") }}{{ split "" $s }}`, want: unitsLimit},
		{name: "semverCompare of a long constraint", tmpl: `{{ semverCompare (repeat 90000 ">=1.0.0 ") "1.0.0" }}`, want: timeLimit},
		{name: "many comparisons of long strings", tmpl: manyCallsOf(twoLong, `{{ if eq $a $b }}{{ end }}`), want: timeLimit},
		{name: "many comparisons of long vars", tmpl: manyCallsOf(`{{ $a := .Vars.a }}{{ $b := .Vars.b }}`, `{{ if eq $a $b }}{{ end }}`), setup: longVars, want: timeLimit},
		{name: "many orderings of long strings", tmpl: manyCallsOf(twoLong, `{{ if lt $b $a }}{{ end }}`), want: timeLimit},
		// Nine keys: a map of at most eight compares a key's ends before
		// it hashes it, which would make the lookups cheap.
		{name: "many lookups of a long key", tmpl: manyCallsOf(twoLong+`{{ $d := dict $a 1 "1" 1 "2" 1 "3" 1 "4" 1 "5" 1 "6" 1 "7" 1 "8" 1 }}`, `{{ if index $d $b }}{{ end }}`), want: timeLimit},
		{name: "eq of many long strings", tmpl: twoLong + `{{ range until 4 }}{{ if eq $a` + strings.Repeat(" $b", 21785) + ` }}{{ end }}{{ end }}`, want: "arguments of"},
		{name: "eq of many long vars", tmpl: `{{ range until 4 }}{{ if eq $.Vars.a` + strings.Repeat(" $.Vars.b", 7000) + ` }}{{ end }}{{ end }}`, setup: longVars, want: "arguments of"},
		{name: "include of a heavy layer", tmpl: `{{ range until 1000 }}{{ include "heavy" . }}{{ end }}`, setup: func(b *render.Bundle) {
			b.Includes = map[string]string{"heavy": `{{ range until 1000 }}x{{ end }}`}
		}, want: unitsLimit},
	}
}

// TestHostileCorpus runs the corpus in a child process, so that the peak
// memory of the whole run can be read from the kernel.
func TestHostileCorpus(t *testing.T) {
	if os.Getenv("PERSONA_HOSTILE_CHILD") != "" {
		t.Skip("running as the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileChild$", "-test.v")
	cmd.Env = append(os.Environ(), "PERSONA_HOSTILE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hostile corpus failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestHostileChild") {
		t.Fatalf("the child did not run the corpus:\n%s", out)
	}
	usage := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	peak := usage.Maxrss * 1024 // Linux reports kilobytes
	t.Logf("peak RSS of the hostile corpus: %d MiB", peak>>20)
	if peak > 256<<20 {
		t.Errorf("peak RSS %d MiB, over 256 MiB", peak>>20)
	}
}

func TestHostileChild(t *testing.T) {
	if os.Getenv("PERSONA_HOSTILE_CHILD") == "" {
		t.Skip("run by TestHostileCorpus")
	}
	for _, c := range hostileCorpus() {
		t.Run(c.name, func(t *testing.T) {
			b := bare(c.tmpl)
			if c.setup != nil {
				c.setup(b)
			}
			start := time.Now()
			_, err := render.Default().Render(b, "")
			elapsed := time.Since(start)
			if err == nil {
				t.Fatal("rendered, want a limit error")
			}
			// On a loaded machine the wall-time limit may come first; it is
			// a limit too.
			if !strings.Contains(err.Error(), c.want) && !strings.Contains(err.Error(), timeLimit) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
			var re *render.RenderError
			if !errors.As(err, &re) || re.Section != "extension.a" {
				t.Errorf("not a RenderError of extension.a: %v", err)
			}
			if elapsed > time.Second {
				t.Errorf("took %s, over 1s", elapsed)
			}
			t.Logf("%s: %s", elapsed.Round(time.Millisecond), truncate(err.Error(), 200))
		})
	}
	// The engine keeps serving after the corpus.
	if got := mustRender(t, bare("still {{ .Harness }}"), ""); got != "still claude\n" {
		t.Errorf("after the corpus: %q", got)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}
