package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// TestHarnessProfileIsACPUProfileOfTheHarness checks that the harness's own
// profile is a CPU profile that go tool pprof reads, showing the work the
// harness did meanwhile, and that it ends when the phase's context does.
func TestHarnessProfileIsACPUProfileOfTheHarness(t *testing.T) {
	path := filepath.Join(t.TempDir(), "phase-harness.pprof")
	ctx, cancel := context.WithCancel(context.Background())
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		// Half a second of CPU, however long a loaded machine takes to give
		// it: 50 samples at the profiler's 100 a second.
		for start := cpuTime(t); cpuTime(t)-start < 500*time.Millisecond; {
			spinForProfile()
		}
		cancel()
	}()
	start := time.Now()
	if err := profileHarness(ctx, path, time.Minute); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the profile took %s: it did not end with its context", took)
	}
	<-busy
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("the harness's profile does not parse: %v", err)
	}
	if len(p.SampleType) == 0 || p.SampleType[len(p.SampleType)-1].Type != "cpu" {
		t.Fatalf("sample types %v, want a CPU profile", p.SampleType)
	}
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil && strings.HasSuffix(line.Function.Name, ".spinForProfile") {
					return
				}
			}
		}
	}
	t.Fatalf("the profile has no sample of the work done while it ran (%d samples)", len(p.Sample))
}

//go:noinline
func spinForProfile() {
	x := 0
	for i := range 100000 {
		x += i * i
	}
	spinSink = x
}

var spinSink int

// cpuTime is the CPU time the test's process has used.
func cpuTime(t *testing.T) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		t.Error(err)
		return time.Hour
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// TestProfileWrittenWholeOrNotAtAll checks that a profile that fails
// leaves no file where it was to be.
func TestProfileWrittenWholeOrNotAtAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.pprof")
	if err := writeWhole(path, func(io.Writer) error { return errors.New("cut short") }); err == nil {
		t.Fatal("a write that failed was reported written")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a profile cut short left %s: %v", path, err)
	}
}
