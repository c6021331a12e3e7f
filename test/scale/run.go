package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// run measures at each N and prints the tables. Whatever it started it
// stops, on an error or an interrupt too.
func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }() // a second Ctrl-C kills at once
	started := time.Now()

	root, err := repositoryRoot()
	if err != nil {
		return err
	}
	dir, binary, err := buildManager(ctx)
	if err != nil {
		return err
	}
	defer os.Remove(binary) // the directory stays: it holds the managers' logs
	if o.managerEnv, err = managerEnvironment(o.managerMemoryLimit, binary, o.managerEnv); err != nil {
		return fmt.Errorf("the manager's Go memory limit: %w", err)
	}

	var reports []*report
	var markdown strings.Builder
	began := started // the first N's time includes the build, as it always did
	for _, n := range o.sizes() {
		r, err := measureAt(ctx, o, n, root, dir, binary, began)
		if err != nil {
			return err
		}
		reports = append(reports, r)
		table := r.markdown()
		fmt.Print(table) // now: a curve's largest N can take an hour more
		markdown.WriteString(table)
		began = time.Now()
	}
	curve := figuresOf(reports)
	if len(o.curve) > 0 {
		table := curveMarkdown(curve)
		fmt.Print(table)
		markdown.WriteString(table)
	}
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(markdown.String()), 0o644); err != nil {
			return err
		}
	}
	if o.jsonPath != "" {
		return writeJSON(o.jsonPath, started, reports[0], curve)
	}
	return nil
}

// measureAt measures at n Personas on a control plane and a manager of its
// own, so that no N inherits another's objects or history, and returns the
// report. Whatever it started it stops, on an error or an interrupt too.
func measureAt(ctx context.Context, o options, n int, root, dir, binary string, began time.Time) (r *report, err error) {
	o.n = n
	logName := "manager.log"
	if len(o.curve) > 0 {
		logName = fmt.Sprintf("manager-n%d.log", n)
		if o.profileDir != "" {
			o.profileDir = filepath.Join(o.profileDir, fmt.Sprintf("n%d", n))
		}
	}
	r = &report{opts: o, machine: machineInfo(), loadBefore: loadAverage(), logPath: filepath.Join(dir, logName)}

	plane, err := startControlPlane(root, o.consistencyChecks)
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := plane.Stop(); stopErr != nil && err == nil && ctx.Err() == nil {
			err = fmt.Errorf("stop the control plane: %w", stopErr)
		}
	}()
	h, err := newHarness(ctx, o, r, plane)
	if err != nil {
		return nil, err
	}

	logFile, err := os.Create(r.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	if err := h.newManager(plane, binary, logFile); err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := h.manager.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop the manager: %w", stopErr)
		}
	}()

	if err := h.measureRounds(ctx); err != nil {
		return nil, err
	}
	r.finish(h.prof, began)
	return r, nil
}

// finish records what is known only at the end of the run.
func (r *report) finish(prof *profiler, began time.Time) {
	r.profiles, r.profileErrors = prof.wait()
	r.loadAfter = loadAverage()
	r.elapsed = time.Since(began)
}
