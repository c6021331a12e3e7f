package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

func TestMemoryLimitIsNinetyPercentOfTheContainers(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	if got := setMemoryLimit(logr.Discard(), memlimit.Limit(512<<20)); got != 512<<20*9/10 {
		t.Errorf("a 512 MiB container gets a Go memory limit of %d bytes, want %d", got, 512<<20*9/10)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := setMemoryLimit(logr.Discard(), func() (uint64, error) { return 0, memlimit.ErrNoLimit }); got != math.MaxInt64 {
		t.Errorf("a container without a limit gets a Go memory limit of %d", got)
	}
}

func TestMemoryLimitKeepsGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "100MiB")
	before := goMemoryLimit()
	if got := setMemoryLimit(logr.Discard(), memlimit.Limit(512<<20)); got != before {
		t.Errorf("with GOMEMLIMIT set, the Go memory limit became %d (was %d)", got, before)
	}
}

// goMemoryLimit is the Go memory limit in effect.
func goMemoryLimit() int64 { return debug.SetMemoryLimit(-1) }
