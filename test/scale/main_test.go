package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/persona-operator/persona-operator/internal/memorylimit"
)

// The harness's manager runs with the Go memory limit of the shipped
// container unless the run asks for none or sets its own. In the shipped
// container, the manager's limit is 90 % of the 512 MiB its image leaves.
func TestManagerEnvironment(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	image, err := memorylimit.Image(exe)
	if err != nil {
		t.Fatal(err)
	}
	shipped := fmt.Sprintf("GOMEMLIMIT=%d", uint64(0.9*float64(512<<20-image)))
	for _, tc := range []struct {
		what, limit string
		extra, want []string
	}{
		{"the default", inShippedContainer, nil, []string{shipped}},
		{"the default, with more", inShippedContainer, []string{"GODEBUG=gctrace=1"}, []string{shipped, "GODEBUG=gctrace=1"}},
		{"one asked for", "460MiB", []string{"GODEBUG=gctrace=1"}, []string{"GOMEMLIMIT=460MiB", "GODEBUG=gctrace=1"}},
		{"none asked for", "", []string{"GOGC=50"}, []string{"GOGC=50"}},
		{"one of the run's own", inShippedContainer, []string{"GOMEMLIMIT=1GiB"}, []string{"GOMEMLIMIT=1GiB"}},
	} {
		if got, err := managerEnvironment(tc.limit, exe, tc.extra); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q (%v), want %q", tc.what, got, err, tc.want)
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
