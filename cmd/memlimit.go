package main

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// memoryLimitRatio is the share of the container's memory limit given to
// the Go runtime as its memory limit: the collector works harder as the
// heap nears it, before the kernel would kill the process
// (install.md#memory).
const memoryLimitRatio = 0.9

// setMemoryLimit sets the Go memory limit to memoryLimitRatio of the
// memory limit that limit reads (the container's, from cgroup v2
// memory.max or v1 memory.limit_in_bytes), once at start. The library keeps
// a GOMEMLIMIT in the environment, and follows AUTOMEMLIMIT (off, or a
// ratio of its own). No limit, or none readable, leaves the Go memory limit
// unset. It returns the limit in effect, math.MaxInt64 for none.
func setMemoryLimit(log logr.Logger, limit memlimit.Provider) int64 {
	set, err := memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(limit),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log))))
	if err != nil {
		log.Error(err, "the Go memory limit is not set from the container's memory limit")
	}
	return set
}

// gcPercent is the garbage collector's GOGC unless the environment sets
// one: the heap may grow to 1.75 times what is live between collections,
// where Go's default lets it double. The manager's live heap grows in
// bursts (a fan-out's renders and deferred statuses), and its peak RSS
// follows the heap goal of the highest of them, not the live heap at rest;
// a collection a little more often costs a few percent of a fan-out's CPU
// (install.md#memory).
const gcPercent = 75

// setGCPercent sets gcPercent, unless GOGC is in the environment, and
// returns the GOGC in effect.
func setGCPercent(log logr.Logger) int {
	if v, ok := os.LookupEnv("GOGC"); ok {
		log.Info("GOGC is set in the environment, keeping it", "GOGC", v)
		percent := debug.SetGCPercent(-1)
		debug.SetGCPercent(percent)
		return percent
	}
	debug.SetGCPercent(gcPercent)
	return gcPercent
}
