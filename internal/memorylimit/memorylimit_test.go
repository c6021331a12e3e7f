package memorylimit

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// A 512 MiB container running a 56 MiB image leaves the Go runtime
// 456 MiB, of which it takes 90 %: 410.4 MiB.
func TestMemoryLimitIsNinetyPercentOfWhatTheImageLeaves(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	const want = 430335590 // 0.9 × 456 MiB, rounded down
	if got := Set(logr.Discard(), memlimit.Limit(512<<20), imageOf(56<<20)); got != want {
		t.Errorf("a 512 MiB container with a 56 MiB image gets a Go memory limit of %d bytes, want %d", got, want)
	}
	if got := goMemoryLimit(); got != want {
		t.Errorf("the Go memory limit in effect is %d bytes, want %d", got, want)
	}
	if got, err := For(512<<20, 56<<20); err != nil || got != want {
		t.Errorf("For gives %d (%v), want %d", got, err, want)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := Set(logr.Discard(), func() (uint64, error) { return 0, memlimit.ErrNoLimit }, imageOf(56<<20)); got != math.MaxInt64 {
		t.Errorf("a container without a limit gets a Go memory limit of %d", got)
	}
	if got := Set(logr.Discard(), memlimit.Limit(32<<20), imageOf(56<<20)); got != math.MaxInt64 {
		t.Errorf("a container smaller than the image gets a Go memory limit of %d", got)
	}
	// An image that cannot be read counts as none: 90 % of 512 MiB.
	unreadable := func() (uint64, error) { return 0, errors.New("not an ELF file") }
	if got := Set(logr.Discard(), memlimit.Limit(512<<20), unreadable); got != 483183820 {
		t.Errorf("with the image unreadable, a 512 MiB container gets a Go memory limit of %d bytes, want 483183820", got)
	}
}

func TestMemoryLimitKeepsGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "100MiB")
	before := goMemoryLimit()
	if got := Set(logr.Discard(), memlimit.Limit(512<<20), imageOf(56<<20)); got != before {
		t.Errorf("with GOMEMLIMIT set, the Go memory limit became %d (was %d)", got, before)
	}
}

// The test binary's image is its code and data: some megabytes, no more
// than its file, and the same read from the running process; a file that
// is no executable has none.
func TestImage(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	image, err := Image(exe)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if image < 1<<20 || image > uint64(info.Size()) {
		t.Errorf("the test binary's image is %d bytes, its file %d bytes", image, info.Size())
	}
	if self, err := Image("/proc/self/exe"); err != nil || self != image {
		t.Errorf("the running executable's image is %d bytes (%v), its file's %d", self, err, image)
	}
	text := filepath.Join(t.TempDir(), "not-an-executable")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Image(text); err == nil {
		t.Error("a shell script has an image")
	}
}

func imageOf(size uint64) func() (uint64, error) {
	return func() (uint64, error) { return size, nil }
}

// goMemoryLimit is the Go memory limit in effect.
func goMemoryLimit() int64 { return debug.SetMemoryLimit(-1) }
