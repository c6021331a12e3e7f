package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// sample is one series of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// snapshot is one scrape of the manager's metrics endpoint.
type snapshot []sample

// scrape reads the manager's metrics.
func scrape(ctx context.Context, url string) (snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape the manager's metrics at %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape the manager's metrics at %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the text exposition format (what the endpoint serves
// without content negotiation) into flat series; a histogram becomes its
// _bucket (with le), _sum and _count series.
func parseMetrics(r io.Reader) (snapshot, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var out snapshot
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			add := func(suffix string, extra map[string]string, v float64) {
				ls := labels
				if extra != nil {
					ls = maps.Clone(labels)
					maps.Copy(ls, extra)
				}
				out = append(out, sample{name: name + suffix, labels: ls, value: v})
			}
			switch {
			case m.Counter != nil:
				add("", nil, m.GetCounter().GetValue())
			case m.Gauge != nil:
				add("", nil, m.GetGauge().GetValue())
			case m.Untyped != nil:
				add("", nil, m.GetUntyped().GetValue())
			case m.Histogram != nil:
				h := m.GetHistogram()
				sawInf := false
				for _, b := range h.GetBucket() {
					sawInf = sawInf || math.IsInf(b.GetUpperBound(), 1)
					add("_bucket", map[string]string{"le": strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)}, float64(b.GetCumulativeCount()))
				}
				if !sawInf {
					add("_bucket", map[string]string{"le": "+Inf"}, float64(h.GetSampleCount()))
				}
				add("_sum", nil, h.GetSampleSum())
				add("_count", nil, float64(h.GetSampleCount()))
			}
		}
	}
	return out, nil
}

// sum adds the series of name whose labels match every key=value of match.
func (s snapshot) sum(name string, match map[string]string) float64 {
	var total float64
	for _, x := range s {
		if x.name == name && matches(x.labels, match) {
			total += x.value
		}
	}
	return total
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// writeMethods are the HTTP methods that write.
var writeMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

// requests sums rest_client_requests_total of the manager by method.
func (s snapshot) requests() map[string]float64 {
	out := map[string]float64{}
	for _, x := range s {
		if x.name == "rest_client_requests_total" {
			out[x.labels["method"]] += x.value
		}
	}
	return out
}

// writes is the manager's API write requests.
func (s snapshot) writes() float64 {
	r := s.requests()
	var total float64
	for _, m := range writeMethods {
		total += r[m]
	}
	return total
}

// histogram is a Prometheus histogram: cumulative bucket counts by upper bound.
type histogram struct {
	bounds []float64
	counts []float64 // cumulative
	count  float64
	sum    float64
}

func (s snapshot) histogram(name string, match map[string]string) histogram {
	byBound := map[float64]float64{}
	var h histogram
	for _, x := range s {
		if !matches(x.labels, match) {
			continue
		}
		switch x.name {
		case name + "_bucket":
			le, err := strconv.ParseFloat(x.labels["le"], 64)
			if err == nil {
				byBound[le] += x.value
			}
		case name + "_sum":
			h.sum += x.value
		case name + "_count":
			h.count += x.value
		}
	}
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// minus is h - before, for a histogram over a window.
func (h histogram) minus(before histogram) histogram {
	out := histogram{count: h.count - before.count, sum: h.sum - before.sum, bounds: h.bounds}
	for i, b := range h.bounds {
		c := h.counts[i]
		for j, bb := range before.bounds {
			if bb == b {
				c -= before.counts[j]
			}
		}
		out.counts = append(out.counts, c)
	}
	return out
}

// quantile estimates the q-quantile the way PromQL's histogram_quantile
// does: linear interpolation inside the bucket it falls in.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.count
	prevBound, prevCount := 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(b, 1) {
				return prevBound // above the highest finite bound
			}
			if h.counts[i] == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(h.counts[i]-prevCount)
		}
		prevBound, prevCount = b, h.counts[i]
	}
	return prevBound
}

// bucketOf is the upper bound of the bucket the q-quantile falls in.
func (h histogram) bucketOf(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	for i, b := range h.bounds {
		if h.counts[i] >= q*h.count {
			return b
		}
	}
	return math.Inf(1)
}

// procStatus reads a field of /proc/<pid>/status, such as VmHWM, in bytes.
func procStatusBytes(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on Linux.
const clockTicks = 100

// procStat is the parent pid, command and CPU time of a process.
type procStat struct {
	pid, ppid int
	comm      string
	cpu       time.Duration
}

func readProcStat(pid int) (procStat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	s := string(raw)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[closing+1:])
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, _ := strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return procStat{pid: pid, ppid: ppid, comm: s[open+1 : closing],
		cpu: time.Duration(utime+stime) * time.Second / clockTicks}, nil
}

// processes are the processes whose CPU time the harness accounts: its own
// children kube-apiserver, etcd and the manager, and itself.
type processes struct {
	apiserver, etcd, manager int
}

// findChildren finds this process's kube-apiserver and etcd children.
func findChildren() processes {
	var p processes
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.ppid != self {
			continue
		}
		switch st.comm {
		case "kube-apiserver":
			p.apiserver = pid
		case "etcd":
			p.etcd = pid
		}
	}
	return p
}

// cpuTimes is the CPU time consumed so far by each process, and by the
// whole machine (from /proc/stat): busy (every process, the kernel and time
// stolen by the hypervisor) and iowait.
type cpuTimes struct {
	apiserver, etcd, manager, harness time.Duration
	machineBusy, iowait               time.Duration
}

// machineCPU reads the first line of /proc/stat.
func machineCPU() (busy, iowait time.Duration) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	var v [8]int64
	for i := range v {
		v[i], _ = strconv.ParseInt(f[i+1], 10, 64)
	}
	// user nice system idle iowait irq softirq steal
	ticks := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	return time.Duration(ticks) * time.Second / clockTicks, time.Duration(v[4]) * time.Second / clockTicks
}

func (p processes) cpu() cpuTimes {
	get := func(pid int) time.Duration {
		if pid == 0 {
			return 0
		}
		st, err := readProcStat(pid)
		if err != nil {
			return 0
		}
		return st.cpu
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	busy, iowait := machineCPU()
	return cpuTimes{apiserver: get(p.apiserver), etcd: get(p.etcd), manager: get(p.manager), harness: self, machineBusy: busy, iowait: iowait}
}

func (c cpuTimes) minus(b cpuTimes) cpuTimes {
	return cpuTimes{apiserver: c.apiserver - b.apiserver, etcd: c.etcd - b.etcd, manager: c.manager - b.manager, harness: c.harness - b.harness,
		machineBusy: c.machineBusy - b.machineBusy, iowait: c.iowait - b.iowait}
}

// others is the CPU time the machine spent on anything but the measured processes.
func (c cpuTimes) others() time.Duration { return max(c.machineBusy-c.total(), 0) }

func (c cpuTimes) String() string {
	return fmt.Sprintf("CPU: kube-apiserver %.1fs, etcd %.1fs, manager %.1fs, harness %.1fs",
		c.apiserver.Seconds(), c.etcd.Seconds(), c.manager.Seconds(), c.harness.Seconds())
}

func (c cpuTimes) total() time.Duration { return c.apiserver + c.etcd + c.manager + c.harness }
