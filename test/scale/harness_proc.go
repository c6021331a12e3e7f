package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStatusBytes reads a field of /proc/<pid>/status, such as VmHWM, in bytes.
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

func machineInfo() string {
	model := "unknown CPU"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				_, _ = fmt.Sscan(v, &kb)
				mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s)%s, %s %s/%s", runtime.NumCPU(), model, mem, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
