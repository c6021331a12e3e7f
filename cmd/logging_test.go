package main

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// withCounter counts the With calls that reach the core it wraps: each is
// an encoding of the fields.
type withCounter struct {
	zapcore.Core
	withs *int
}

func (c withCounter) With(fields []zapcore.Field) zapcore.Core {
	*c.withs++
	return withCounter{Core: c.Core.With(fields), withs: c.withs}
}

// A reconcile's logger gets its fields encoded only when it writes an
// entry, once however many it writes, and every entry carries them in
// order; one that writes nothing, or only below the level, encodes nothing.
func TestLazyFieldsEncodeOnlyWhatIsWritten(t *testing.T) {
	observed, logs := observer.New(zapcore.InfoLevel)
	withs := 0
	log := zap.New(&lazyFields{base: withCounter{Core: observed, withs: &withs}})

	quiet := log.With(zap.String("controller", "persona")).With(zap.String("name", "p1"))
	quiet.Debug("below the level")
	if withs != 0 {
		t.Fatalf("%d encodings for a logger that wrote nothing, want 0", withs)
	}

	loud := log.With(zap.String("controller", "persona")).With(zap.String("name", "p2"), zap.String("reconcileID", "r"))
	loud.Info("one")
	loud.Info("two", zap.Int("n", 2))
	if withs != 1 {
		t.Errorf("%d encodings for a logger that wrote twice, want 1", withs)
	}
	entries := logs.AllUntimed()
	if len(entries) != 2 {
		t.Fatalf("%d entries written, want 2", len(entries))
	}
	want := []string{"controller", "name", "reconcileID"}
	for _, e := range entries {
		var keys []string
		for _, f := range e.Context {
			keys = append(keys, f.Key)
		}
		if len(keys) < len(want) || keys[0] != want[0] || keys[1] != want[1] || keys[2] != want[2] {
			t.Errorf("entry %q carries %v, want %v first", e.Message, keys, want)
		}
	}
	if got := entries[1].ContextMap()["n"]; got != int64(2) {
		t.Errorf("the entry's own field n = %v, want 2", got)
	}
}
