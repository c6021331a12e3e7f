package render_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/persona-operator/persona-operator/internal/render"
)

// slowTemplate takes some tens of milliseconds on any machine: 60 matches of
// a pattern over 20 KB, each within the limits.
const slowTemplate = `{{ $s := repeat 20000 "a" }}{{ range until 60 }}{{ if regexMatch "a*b" $s }}x{{ end }}{{ end }}ok`

// TestPersonaBudgetSharedByVariants renders a persona whose prompt and six
// variants each fit the limit of one render, but not, together, the
// persona's: ConfigMap must fail with the persona's limit.
func TestPersonaBudgetSharedByVariants(t *testing.T) {
	limits := render.DefaultLimits
	limits.MaxDuration = time.Second
	limits.MaxPersonaDuration = 100 * time.Millisecond
	e := render.NewEngine(limits)
	b := bare(slowTemplate)
	for _, name := range []string{"v1", "v2", "v3", "v4", "v5", "v6"} {
		b.Variants = append(b.Variants, render.Variant{Name: name})
	}
	start := time.Now()
	if _, err := e.Render(b, "v6"); err != nil {
		t.Fatalf("one variant alone: %v", err)
	}
	one := time.Since(start)
	if one*7 < limits.MaxPersonaDuration {
		t.Skipf("one render took %s: seven do not reach %s", one, limits.MaxPersonaDuration)
	}
	// The fastest of a few runs counts: a loaded machine can deschedule
	// one past any slack.
	var err error
	elapsed := time.Duration(math.MaxInt64)
	for range 3 {
		start = time.Now()
		_, runErr := e.ConfigMap(b)
		if d := time.Since(start); d < elapsed {
			elapsed, err = d, runErr
		}
		if elapsed <= limits.MaxPersonaDuration+one+50*time.Millisecond {
			break
		}
	}
	var limit *render.LimitError
	if !errors.As(err, &limit) || limit.Limit != render.LimitPersonaTime {
		t.Fatalf("ConfigMap: %v, want a LimitError of %q", err, render.LimitPersonaTime)
	}
	// Either the clock ran out between calls, or a call was refused for
	// the time left; both name the persona's limit.
	for _, want := range []string{"100ms", "the persona's prompt and its variants"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if elapsed > limits.MaxPersonaDuration+one+50*time.Millisecond {
		t.Errorf("ConfigMap took %s, over the persona's limit of %s by more than one render (%s)", elapsed, limits.MaxPersonaDuration, one)
	}
}

// TestPersonaBudgetDefault is the default of personas.md#limits: one second
// for the prompt and every variant together, besides each render's own.
func TestPersonaBudgetDefault(t *testing.T) {
	if got := render.DefaultLimits.MaxPersonaDuration; got != time.Second {
		t.Errorf("MaxPersonaDuration is %s, want 1s", got)
	}
	// A ConfigMap of a cheap persona with variants renders within it.
	b := bare("{{ .Harness }}")
	b.Variants = []render.Variant{{Name: "fast", Model: "claude-haiku-4-5"}}
	out, err := render.Default().ConfigMap(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Data[render.VariantKey("fast")]; got != "claude\n" {
		t.Errorf("variant prompt %q", got)
	}
}
