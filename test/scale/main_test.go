package main

import (
	"slices"
	"testing"
)

// The harness's manager runs with the Go memory limit of the shipped
// container unless the run asks for none or sets its own.
func TestManagerEnvironment(t *testing.T) {
	for _, tc := range []struct {
		what, limit string
		extra, want []string
	}{
		{"the default", shippedGoMemoryLimit, nil, []string{"GOMEMLIMIT=460MiB"}},
		{"with more", "460MiB", []string{"GODEBUG=gctrace=1"}, []string{"GOMEMLIMIT=460MiB", "GODEBUG=gctrace=1"}},
		{"none asked for", "", []string{"GOGC=50"}, []string{"GOGC=50"}},
		{"one of the run's own", "460MiB", []string{"GOMEMLIMIT=1GiB"}, []string{"GOMEMLIMIT=1GiB"}},
	} {
		if got := managerEnvironment(tc.limit, tc.extra); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.what, got, tc.want)
		}
	}
}
