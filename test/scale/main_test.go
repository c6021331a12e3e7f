package main

import (
	"errors"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// A collection's delete is asked again when it timed out or got no answer
// (a reset stream), never when the API server refused it.
func TestDeleteAgain(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{apierrors.NewTimeoutError("deleting", 1), true},
		{errors.New(`Delete "https://127.0.0.1:45487/api/v1/namespaces/n/configmaps": stream error: stream ID 1160257; INTERNAL_ERROR; received from peer`), true},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no")), false},
		{apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "n"), false},
	}
	for _, c := range cases {
		if got := deleteAgain(c.err); got != c.want {
			t.Errorf("deleteAgain(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
