package persona

import (
	"testing"
	"time"
)

func TestOverruns(t *testing.T) {
	o := newOverruns()
	p := objectKey("ns", "p")
	b := bundleWith("{{ . }}")
	for i, want := range []time.Duration{overrunRetry, 2 * overrunRetry, 0} {
		if got := o.add(p, 1, b); got != want {
			t.Fatalf("overrun %d: retry after %v, want %v", i+1, got, want)
		}
	}
	if got := o.add(p, 2, b); got != overrunRetry {
		t.Fatalf("a new generation starts the count again: retry after %v, want %v", got, overrunRetry)
	}
	if got := o.add(p, 2, bundleWith("other")); got != overrunRetry {
		t.Fatalf("new inputs start the count again: retry after %v, want %v", got, overrunRetry)
	}
	o.reset(p)
	o.add(p, 2, b)
	if got := o.add(p, 2, b); got != 2*overrunRetry {
		t.Fatalf("after a render in time the count starts again: retry after %v, want %v", got, 2*overrunRetry)
	}
}
