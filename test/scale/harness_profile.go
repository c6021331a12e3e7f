package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/persona-operator/persona-operator/test/scrape"
)

// profiler takes CPU profiles of kube-apiserver, the manager and the
// harness itself during the timed phases, so that where the time goes can
// be read with go tool pprof, and heap profiles of the manager as phases
// end, so that what its memory holds can be read too.
type profiler struct {
	dir     string
	seconds int
	// apiserver is an administrator's HTTP client of kube-apiserver,
	// apiserverURL its base URL; manager the base URL of the manager's
	// pprof endpoints.
	apiserver    *http.Client
	apiserverURL string
	manager      string

	wg    sync.WaitGroup
	mu    sync.Mutex
	files []string
	errs  []error
	// stopPeak ends the running phase's watchPeak.
	stopPeak context.CancelFunc
}

// start profiles the three processes for the first p.seconds of the phase
// named phase, in the background.
func (p *profiler) start(ctx context.Context, phase string) {
	p.profile(ctx, phase, true)
}

// startFloor profiles kube-apiserver and the harness for the first
// p.seconds of the floor named phase, which runs with the manager stopped:
// beside the phase's profiles, what the API server does for the operator
// and not for the floor's bare client.
func (p *profiler) startFloor(ctx context.Context, phase string) {
	p.profile(ctx, phase, false)
}

func (p *profiler) profile(ctx context.Context, phase string, manager bool) {
	if p == nil {
		return
	}
	slug := strings.ReplaceAll(phase, " ", "-")
	fetched := func(c *http.Client, base string) func(path string) error {
		return func(path string) error {
			return fetchProfile(ctx, c, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, p.seconds), path)
		}
	}
	profiles := map[string]func(path string) error{
		"kube-apiserver": fetched(p.apiserver, p.apiserverURL),
		"manager":        fetched(http.DefaultClient, p.manager),
		"harness":        func(path string) error { return profileHarness(ctx, path, time.Duration(p.seconds)*time.Second) },
	}
	if !manager {
		delete(profiles, "manager")
	}
	for name, profile := range profiles {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			path := filepath.Join(p.dir, fmt.Sprintf("%s-%s.pprof", slug, name))
			if err := profile(path); err != nil {
				p.fail(fmt.Errorf("profile %s during %s: %w", name, phase, err))
				return
			}
			p.mu.Lock()
			p.files = append(p.files, path)
			p.mu.Unlock()
		}()
	}
}

// watchPeak writes the manager's heap profile, as of its last garbage
// collection, each time its RSS rises 4 MiB above the highest read so far
// in the phase named phase (read every 250 ms), until the phase's heap
// profile: the last one written shows what the heap held near the phase's
// peak, which the profile as the phase ends, after its garbage is gone,
// does not. Beside it, the manager's memory then (memoryAt).
func (p *profiler) watchPeak(ctx context.Context, phase string, pid int) {
	if p == nil {
		return
	}
	p.endPeak()
	ctx, stop := context.WithCancel(ctx)
	p.mu.Lock()
	p.stopPeak = stop
	p.mu.Unlock()
	path := filepath.Join(p.dir, fmt.Sprintf("%s-manager-heap-peak.pprof", strings.ReplaceAll(phase, " ", "-")))
	memoryPath := filepath.Join(p.dir, fmt.Sprintf("%s-manager-memory-peak.txt", strings.ReplaceAll(phase, " ", "-")))
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		var highest int64
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rss, err := procStatusBytes(pid, "VmRSS")
			if err != nil || rss < highest+4<<20 {
				continue
			}
			if err := fetchProfile(ctx, http.DefaultClient, p.manager+"/debug/pprof/heap", path); err != nil {
				if ctx.Err() == nil {
					p.fail(fmt.Errorf("heap profile of the manager at its peak in %s: %w", phase, err))
				}
				return
			}
			if err := p.memoryAt(ctx, pid, memoryPath); err != nil {
				if ctx.Err() == nil {
					p.fail(fmt.Errorf("the manager's memory at its peak in %s: %w", phase, err))
				}
				return
			}
			if highest == 0 {
				p.mu.Lock()
				p.files = append(p.files, path, memoryPath)
				p.mu.Unlock()
			}
			highest = rss
		}
	}()
}

// memoryAt writes to path what the manager's RSS is made of now: its
// anonymous and file pages (/proc), and the Go runtime's account of them
// (runtime.MemStats: the heap's objects, its spans in use, its idle pages
// not yet returned to the system, stacks and the runtime's own), which
// tells a heap that holds more than its objects from one that grew.
func (p *profiler) memoryAt(ctx context.Context, pid int, path string) error {
	var b strings.Builder
	for _, field := range []string{"VmRSS", "RssAnon", "RssFile", "VmHWM"} {
		v, err := procStatusBytes(pid, field)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "# %s = %d (%d MiB)\n", field, v, v>>20)
	}
	memStats, err := memStatsOf(ctx, p.manager, false)
	if err != nil {
		return err
	}
	b.WriteString(memStats)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// memStatsOf is the runtime.MemStats the pprof endpoints at base tell in
// their text heap profile ("# runtime.MemStats" and its "# Field = value"
// lines), read after a garbage collection when collect is set.
func memStatsOf(ctx context.Context, base string, collect bool) (string, error) {
	url := base + "/debug/pprof/heap?debug=1"
	if collect {
		url += "&gc=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	_, memStats, ok := strings.Cut(string(text), "# runtime.MemStats")
	if !ok {
		return "", fmt.Errorf("no runtime.MemStats in the manager's heap profile")
	}
	return "# runtime.MemStats" + memStats, nil
}

// liveHeap is the manager's live heap: the bytes of its heap's objects
// (runtime.MemStats.HeapAlloc) right after a garbage collection forced
// through its pprof endpoints at base.
func liveHeap(ctx context.Context, base string) (int64, error) {
	memStats, err := memStatsOf(ctx, base, true)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(memStats) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "# HeapAlloc = "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no HeapAlloc in the manager's runtime.MemStats")
}

// endPeak ends the running watchPeak, if any: a phase that failed before
// its heap profile leaves one running, which wait would otherwise wait on.
func (p *profiler) endPeak() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopPeak != nil {
		p.stopPeak()
		p.stopPeak = nil
	}
}

// heap writes the manager's heap profile as the phase named phase ends,
// after a garbage collection, so that its in-use figures are what is live
// then (go tool pprof -sample_index=inuse_space -top FILE).
func (p *profiler) heap(ctx context.Context, phase string) {
	if p == nil {
		return
	}
	p.endPeak()
	path := filepath.Join(p.dir, fmt.Sprintf("%s-manager-heap.pprof", strings.ReplaceAll(phase, " ", "-")))
	if err := fetchProfile(ctx, http.DefaultClient, p.manager+"/debug/pprof/heap?gc=1", path); err != nil {
		p.fail(fmt.Errorf("heap profile of the manager after %s: %w", phase, err))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files = append(p.files, path)
}

func (p *profiler) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, err)
}

// wait waits for the profiles started so far and returns the files written
// and the errors met; a profile that fails does not stop the measurement.
func (p *profiler) wait() (files []string, errs []error) {
	if p == nil {
		return nil, nil
	}
	p.endPeak()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.files, p.errs
}

func fetchProfile(ctx context.Context, c *http.Client, url, path string) error {
	body, err := scrape.Open(ctx, c, url)
	if err != nil {
		return err
	}
	defer body.Close()
	return writeWhole(path, func(w io.Writer) error {
		_, err := io.Copy(w, body)
		return err
	})
}

// profileHarness writes the harness's own CPU profile for the given time,
// or until ctx is done: the trackers that tell a phase's end run on the
// cores being measured, and what they cost is read from it.
func profileHarness(ctx context.Context, path string, d time.Duration) error {
	return writeWhole(path, func(w io.Writer) error {
		if err := pprof.StartCPUProfile(w); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
		pprof.StopCPUProfile()
		return nil
	})
}

// writeWhole writes path whole or not at all: a profile cut short leaves
// the last one.
func writeWhole(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".profile-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
