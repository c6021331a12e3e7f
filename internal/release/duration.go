package release

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// durationPattern is a pause's duration as a string, as Argo Rollouts
// reads it: a whole number and a unit, s, m or h.
var durationPattern = regexp.MustCompile(`^([0-9]+)(s|m|h)$`)

// PauseDuration is how long a pause step of duration d waits; false
// without a duration (the step waits for a promote). It fails on a
// duration that is neither whole seconds nor a number and a unit, or that
// is negative or over a week.
func PauseDuration(d *intstr.IntOrString) (time.Duration, bool, error) {
	if d == nil {
		return 0, false, nil
	}
	var seconds int64
	if d.Type == intstr.Int {
		seconds = int64(d.IntVal)
	} else {
		m := durationPattern.FindStringSubmatch(d.StrVal)
		if m == nil {
			return 0, true, fmt.Errorf("%q is not a whole number of seconds, or a whole number and a unit, s, m or h (30m)", d.StrVal)
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n > v1alpha1.MaxPauseDurationSeconds {
			return 0, true, fmt.Errorf("%q is longer than a week", d.StrVal)
		}
		seconds = n * map[string]int64{"s": 1, "m": 60, "h": 3600}[m[2]]
	}
	switch {
	case seconds < 0:
		return 0, true, fmt.Errorf("%d seconds is negative", seconds)
	case seconds > v1alpha1.MaxPauseDurationSeconds:
		return 0, true, fmt.Errorf("%s is longer than a week", d.String())
	}
	return time.Duration(seconds) * time.Second, true, nil
}
