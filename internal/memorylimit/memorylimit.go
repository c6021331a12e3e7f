// Package memorylimit sets the manager's Go memory limit from its
// container's memory limit (install.md#memory).
package memorylimit

import (
	"debug/elf"
	"errors"
	"fmt"
	"log/slog"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// Ratio is the share of what the container leaves the Go runtime that is
// given to it as its memory limit: the collector works harder as the heap
// nears it, before the kernel would kill the process.
const Ratio = 0.9

// SetFromContainer sets the Go memory limit from the container's memory
// limit and the running executable's image, as Set does.
func SetFromContainer(log logr.Logger) int64 {
	return Set(log, memlimit.FromCgroup, func() (uint64, error) { return Image("/proc/self/exe") })
}

// Set sets the Go memory limit to Ratio of the container's memory limit
// (from container: cgroup v2 memory.max or v1 memory.limit_in_bytes) less
// the bytes of the executable the kernel maps from its file (from image),
// once at start. The kernel counts those pages against the container, and
// the Go runtime does not count them against its limit: without taking
// them off, a manager held at its Go memory limit is that limit plus the
// resident part of its binary. An image that cannot be read is logged and
// counted as none. The library keeps a GOMEMLIMIT in the environment, and
// follows AUTOMEMLIMIT (off, or a ratio of its own). No limit, or none
// readable, leaves the Go memory limit unset. It returns the limit in
// effect, math.MaxInt64 for none.
func Set(log logr.Logger, container memlimit.Provider, image func() (uint64, error)) int64 {
	imageOrNone := func() uint64 {
		size, err := image()
		if err != nil {
			log.Error(err, "the executable's image is not taken off the container's memory limit")
		}
		return size
	}
	set, err := memlimit.Set(memlimit.WithRatio(Ratio), memlimit.WithProvider(lessImage(container, imageOrNone)),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log))))
	if err != nil {
		log.Error(err, "the Go memory limit is not set from the container's memory limit")
	}
	return set
}

// For is the Go memory limit Set sets in a container whose memory limit is
// container, for an executable whose image is image bytes.
func For(container, image uint64) (uint64, error) {
	return memlimit.ApplyRatio(lessImage(memlimit.Limit(container), func() uint64 { return image }), Ratio)()
}

// lessImage is the memory the container leaves the Go runtime: its limit
// less the executable's image, read only when there is a limit.
func lessImage(container memlimit.Provider, image func() uint64) memlimit.Provider {
	return func() (uint64, error) {
		limit, err := container()
		if err != nil {
			return 0, err
		}
		size := image()
		if limit <= size {
			return 0, fmt.Errorf("the container's memory limit, %d bytes, is not more than the executable's image, %d bytes", limit, size)
		}
		return limit - size, nil
	}
}

// Image is the bytes the kernel maps from the file of the executable at
// path, its loadable segments' sizes in the file (code, read-only data,
// initialised data): the most of it that can be resident. Memory the
// segments have beyond the file (zeroed data) is anonymous, as the heap is.
func Image(path string) (uint64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read the executable's segments: %w", err)
	}
	defer f.Close()
	var size uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			size += p.Filesz
		}
	}
	if size == 0 {
		return 0, errors.New("the executable has no loadable segment")
	}
	return size, nil
}
