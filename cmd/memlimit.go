package main

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"

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
// memory.max or v1 memory.limit_in_bytes), once at start. A GOMEMLIMIT in
// the environment is kept. No limit, or none readable, leaves the Go
// memory limit unset. It returns the limit in effect, math.MaxInt64 for none.
func setMemoryLimit(log logr.Logger, limit memlimit.Provider) int64 {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		log.Info("keeping the Go memory limit set by GOMEMLIMIT", "GOMEMLIMIT", v)
		return goMemoryLimit()
	}
	set, err := memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(limit))
	switch {
	case err != nil:
		log.Error(err, "cannot read the container's memory limit; the Go memory limit is not set")
	case set == math.MaxInt64:
		log.Info("the container has no memory limit; the Go memory limit is not set")
	default:
		ratio := strconv.FormatFloat(memoryLimitRatio, 'f', -1, 64)
		if v, ok := os.LookupEnv("AUTOMEMLIMIT"); ok {
			ratio = v // the library's override of the ratio
		}
		log.Info("set the Go memory limit from the container's memory limit", "bytes", set, "MiB", set>>20, "ratio", ratio)
	}
	return goMemoryLimit()
}

// goMemoryLimit is the Go memory limit in effect.
func goMemoryLimit() int64 { return debug.SetMemoryLimit(-1) }
