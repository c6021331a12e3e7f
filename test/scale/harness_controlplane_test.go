package main

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/persona-operator/persona-operator/test/scrape"
)

// The harness's kube-apiserver runs without its watch-cache consistency
// checks unless asked: the flag it is given turns the gate off.
func TestControlPlaneWithoutConsistencyChecks(t *testing.T) {
	env := &envtest.Environment{}
	withoutConsistencyChecks(env)
	args := env.ControlPlane.APIServer.Configure().AsStrings(nil)
	if !slices.Contains(args, "--feature-gates=DetectCacheInconsistency=false") {
		t.Errorf("kube-apiserver's flags %q do not turn DetectCacheInconsistency off", args)
	}
}

// The gate's state is read from kube-apiserver's own metrics, and a gate
// they do not name is not taken for off.
func TestFeatureEnabledFromMetrics(t *testing.T) {
	metrics, err := scrape.Parse(strings.NewReader(`# HELP kubernetes_feature_enabled This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DetectCacheInconsistency",stage="BETA"} 0
kubernetes_feature_enabled{name="WatchList",stage="BETA"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		gate              string
		enabled, reported bool
	}{
		{"DetectCacheInconsistency", false, true},
		{"WatchList", true, true},
		{"NoSuchGate", false, false},
	} {
		if enabled, reported := featureEnabled(metrics, c.gate); enabled != c.enabled || reported != c.reported {
			t.Errorf("%s: enabled %t, reported %t; want %t, %t", c.gate, enabled, reported, c.enabled, c.reported)
		}
	}
}

// The report's conditions say how kube-apiserver ran: its consistency
// checks on or off, and the collection before each window.
func TestConditionsSayHowTheAPIServerRan(t *testing.T) {
	for _, checks := range []bool{false, true} {
		r := &report{opts: options{n: 2000, consistencyChecks: checks}}
		var b strings.Builder
		r.writeConditions(&b)
		want := "consistency checks off (--feature-gates=DetectCacheInconsistency=false)"
		if checks {
			want = "consistency checks on, as it ships (-apiserver-consistency-checks)"
		}
		for _, s := range []string{want, "it collects its garbage before each floor"} {
			if !strings.Contains(b.String(), s) {
				t.Errorf("with the checks on %t, the conditions do not say %q:\n%s", checks, s, b.String())
			}
		}
	}
}
