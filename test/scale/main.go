package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/persona-operator/persona-operator/internal/controller"
	"github.com/persona-operator/persona-operator/internal/memorylimit"
)

// The harness's own client limits: high, so the harness is not throttled.
const (
	harnessQPS   = 1000
	harnessBurst = 2000
)

// Bounds of the waits.
const (
	convergenceTimeout = 10 * time.Minute
	fanOutTimeout      = 10 * time.Minute
	settleLimit        = 3 * time.Minute
	// settleQuiet is how long the manager must write nothing to count as
	// settled: longer than client-go's event recorder waits (10s ± 25%)
	// before it retries an Event write, so retries count in their phase.
	settleQuiet        = 15 * time.Second
	webhookWarmCreates = 2 // per block, not counted
	webhookBlocks      = 10
)

type options struct {
	n              int
	steady         time.Duration
	webhookSamples int
	workers        int
	managerFlags   []string
	// managerEnv is added to the manager's environment alone, with the Go
	// memory limit of managerMemoryLimit once the manager is built.
	managerEnv         []string
	managerMemoryLimit string
	out                string
	profileDir         string
	profileSeconds     int
	rounds             int
	// restarts is how many times the restart phase kills the manager.
	restarts int
	// curve, when set, is the Ns to measure at instead of n, ascending.
	curve    sizes
	jsonPath string
	// consistencyChecks leaves kube-apiserver's watch-cache consistency
	// checks on (startControlPlane).
	consistencyChecks bool
}

// sizes are the Ns the run measures at: the curve's, else n alone.
func (o options) sizes() []int {
	if len(o.curve) > 0 {
		return o.curve
	}
	return []int{o.n}
}

func main() {
	// The informer floor starts its informers as the manager does.
	controller.ListAtStart()
	var o options
	var managerFlags, managerEnv string
	flag.IntVar(&o.n, "n", 2000, "Personas to converge and fan out to.")
	flag.DurationVar(&o.steady, "steady", 60*time.Second, "The steady-state window in which the manager should write nothing.")
	flag.IntVar(&o.webhookSamples, "webhook-samples", 1000, "Sequential Persona creates timed with the webhook, and as many without it: the p99 of 1000 is the tenth slowest.")
	flag.IntVar(&o.rounds, "rounds", 3, "Rounds of floors and operator measurements; the table gives their medians.")
	flag.IntVar(&o.restarts, "restarts", 3, "Times the last round kills the manager and starts a new one at N Personas, after its floors (0: none).")
	flag.IntVar(&o.workers, "workers", 16, "Concurrent requests of the harness's client.")
	flag.StringVar(&managerFlags, "manager-flags", "", `Extra flags for the manager binary, e.g. "--persona-workers=8 --kube-api-qps=500".`)
	flag.StringVar(&managerEnv, "manager-env", "", `Environment variables for the manager alone, e.g. "GODEBUG=gctrace=1" (its garbage collections in its log) or "GOGC=50".`)
	flag.StringVar(&o.managerMemoryLimit, "manager-memory-limit", inShippedContainer, `The manager's Go memory limit (GOMEMLIMIT): by default ("`+inShippedContainer+`") the one it sets itself in the shipped 512Mi container (install.md#memory), which the harness's manager, outside a container, would not; a GOMEMLIMIT value; or "" for none. A GOMEMLIMIT in -manager-env is kept instead.`)
	flag.StringVar(&o.out, "out", "", "Also write the table, as Markdown, to this file.")
	flag.StringVar(&o.profileDir, "profile", "", "Write CPU profiles of kube-apiserver, the manager and the harness itself during convergence, fan-out and restarts (and of kube-apiserver and the harness during the last round's floors), heap profiles of the manager as they end and at their peak RSS, and what that peak RSS is made of (*-manager-memory-peak.txt), into this directory (read the profiles with go tool pprof).")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 10, "With -profile: how many seconds of each phase, from its start, to profile.")
	flag.Var(&o.curve, "curve", "Comma-separated Ns, e.g. 500,2000,8000: measure at each N instead of -n, each on a control plane and a manager of its own, and add a table of how time and memory per Persona grow with N.")
	flag.BoolVar(&o.consistencyChecks, "apiserver-consistency-checks", false, "Leave kube-apiserver's watch-cache consistency checks on (the DetectCacheInconsistency feature gate, on by default since Kubernetes 1.34). Every 5 to 7.5 minutes each resource's check lists it whole from etcd: at N = 8,000 one costs seconds of CPU, in whichever phase or floor is running. Off by default, so that what each window measures is its own writes.")
	flag.StringVar(&o.jsonPath, "json", "", "Also write the figures, with stable keys, as JSON to this file, to compare versions.")
	flag.Parse()
	o.managerFlags = strings.Fields(managerFlags)
	o.managerEnv = strings.Fields(managerEnv)
	if o.n < 1 || o.rounds < 1 || o.workers < 1 || o.webhookSamples < 1 || o.profileSeconds < 1 || o.steady < 0 || o.restarts < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "scale: -n, -rounds, -workers, -webhook-samples and -profile-seconds must be positive, -steady and -restarts not negative, and no arguments")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted; the manager and the control plane are stopped")
		}
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

const (
	// inShippedContainer asks for the Go memory limit the manager sets
	// itself in the shipped container.
	inShippedContainer = "container"
	// shippedContainerMemory is the shipped container's memory limit
	// (config/manager/manager.yaml, the chart's resources).
	shippedContainerMemory = 512 << 20
)

// managerEnvironment is the manager's environment beyond the harness's:
// extra, and the Go memory limit unless extra sets one or it is empty. The
// shipped container's limit is worked out as the manager works it out for
// binary there.
func managerEnvironment(memoryLimit, binary string, extra []string) ([]string, error) {
	if memoryLimit == "" || slices.ContainsFunc(extra, func(kv string) bool { return strings.HasPrefix(kv, "GOMEMLIMIT=") }) {
		return extra, nil
	}
	if memoryLimit == inShippedContainer {
		image, err := memorylimit.Image(binary)
		if err != nil {
			return nil, err
		}
		limit, err := memorylimit.For(shippedContainerMemory, image)
		if err != nil {
			return nil, err
		}
		memoryLimit = strconv.FormatUint(limit, 10)
	}
	return append([]string{"GOMEMLIMIT=" + memoryLimit}, extra...), nil
}

func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
