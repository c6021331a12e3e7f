package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestTemplateSourceLabelFlag(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		unlabelled bool
		err        string
	}{
		{nil, false, ""},
		{[]string{"--template-source-label=require"}, false, ""},
		{[]string{"--template-source-label=warn"}, true, ""},
		{[]string{"--template-source-label=ignore"}, false, `invalid value "ignore" for flag -template-source-label: "ignore" is neither require nor warn`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f, _ := registerFlags(fs)
			err := fs.Parse(tc.args)
			switch {
			case tc.err != "":
				if err == nil || err.Error() != tc.err {
					t.Errorf("error %v, want %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case f.readUnlabelledSources != tc.unlabelled:
				t.Errorf("reads unlabelled sources: %v, want %v", f.readUnlabelledSources, tc.unlabelled)
			}
		})
	}
}

func TestRestartFlags(t *testing.T) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f, _ := registerFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.restartOptions() != nil {
		t.Fatal("restarts are on by default")
	}
	fs = flag.NewFlagSet("manager", flag.ContinueOnError)
	f, _ = registerFlags(fs)
	if err := fs.Parse([]string{"--restart-workloads", "--max-concurrent-restarts=3", "--restart-deadline=2m"}); err != nil {
		t.Fatal(err)
	}
	if o := f.restartOptions(); o == nil || o.MaxConcurrent != 3 || o.Deadline.String() != "2m0s" {
		t.Fatalf("options %+v, want 3 at once within 2m", o)
	}
}

func TestControlPlaneNetworksFlag(t *testing.T) {
	for _, tc := range []struct {
		value, want, err string
	}{
		{"", "[]", ""},
		{"10.0.0.7/24, fd00::/64", "[10.0.0.0/24 fd00::/64]", ""},
		{"10.0.0.7", "", `invalid value "10.0.0.7" for flag -webhook-control-plane-networks: netip.ParsePrefix("10.0.0.7"): no '/'`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f, _ := registerFlags(fs)
			err := fs.Parse([]string{"--webhook-control-plane-networks=" + tc.value})
			switch {
			case tc.err != "":
				if err == nil || err.Error() != tc.err {
					t.Errorf("error %v, want %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case fmt.Sprint(f.controlPlaneNetworks) != tc.want:
				t.Errorf("networks %v, want %s", f.controlPlaneNetworks, tc.want)
			}
		})
	}
}
