package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/persona-operator/persona-operator/test/scrape"
)

// phase is one timed step, with what the processes did during it.
type phase struct {
	name            string
	round           int
	procs           processes
	start           time.Time
	wall            time.Duration
	cpuBefore, cpu  cpuTimes
	before, after   scrape.Snapshot // the manager's metrics; nil before it runs
	settled         scrape.Snapshot // after the manager settled, when it was waited for
	settleWait      time.Duration
	throttled       int
	maxThrottleWait time.Duration
	// apiserverRSS is kube-apiserver's RSS as the phase starts: its heap
	// holds the watch cache, which grows with the events of the last
	// minute or so, and its garbage collection costs with it.
	apiserverRSS int64
	// managerPeakRSS is the manager's peak RSS (VmHWM) as the phase ends:
	// it only grows, so the phase where it grows is the one that sets it.
	managerPeakRSS int64
}

func (r *report) begin(name string, procs processes, before scrape.Snapshot) *phase {
	ph := &phase{name: name, round: r.round, procs: procs, start: time.Now(), cpuBefore: procs.cpu(), before: before}
	if rss, err := procStatusBytes(procs.apiserver, "VmRSS"); err == nil {
		ph.apiserverRSS = rss
	}
	r.phases = append(r.phases, ph)
	if r.logPath != "" {
		if st, err := os.Stat(r.logPath); err == nil {
			r.logOffset = st.Size()
		}
	}
	return ph
}

func (r *report) end(ph *phase, after scrape.Snapshot) {
	ph.wall = time.Since(ph.start)
	ph.cpu = ph.procs.cpu().minus(ph.cpuBefore)
	ph.after = after
	if ph.procs.manager > 0 {
		if hwm, err := procStatusBytes(ph.procs.manager, "VmHWM"); err == nil {
			ph.managerPeakRSS = hwm
		}
	}
	if r.logPath != "" {
		ph.throttled, ph.maxThrottleWait = throttling(r.logPath, r.logOffset)
	}
}

func (r *report) beginManaged(name string, procs processes, metricsURL string) (*phase, error) {
	s, err := scrape.Get(context.Background(), metricsURL)
	if err != nil {
		return nil, err
	}
	return r.begin(name, procs, s), nil
}

func (r *report) endManaged(ctx context.Context, ph *phase, metricsURL string) error {
	s, err := scrape.Get(ctx, metricsURL)
	if err != nil {
		return err
	}
	r.end(ph, s)
	return nil
}

// settleManaged waits for the manager to settle after the phase, so that
// the phase's write totals include what trailed its measured end.
func (r *report) settleManaged(ctx context.Context, ph *phase, metricsURL string, quiet time.Duration) (err error) {
	if ph.settleWait, err = settle(ctx, metricsURL, quiet, settleLimit); err != nil {
		return err
	}
	ph.settled, err = scrape.Get(ctx, metricsURL)
	return err
}

var throttleDelay = regexp.MustCompile(`delay="([^"]+)"`)

// throttling counts the client-side throttling waits client-go logged
// (those over 1s are logged at the default level) after offset.
func throttling(path string, offset int64) (n int, maxWait time.Duration) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "client-side throttling") {
			continue
		}
		n++
		if m := throttleDelay.FindStringSubmatch(line); m != nil {
			if d, err := time.ParseDuration(m[1]); err == nil && d > maxWait {
				maxWait = d
			}
		}
	}
	return n, maxWait
}
