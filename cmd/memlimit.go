package main

import (
	"log/slog"

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
