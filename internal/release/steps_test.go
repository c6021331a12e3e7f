package release

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func weight(w int32) v1alpha1.RolloutStep { return v1alpha1.RolloutStep{SetWeight: &w} }

func pause(d string) v1alpha1.RolloutStep {
	p := &v1alpha1.RolloutPause{}
	if d != "" {
		v := intstr.Parse(d)
		p.Duration = &v
	}
	return v1alpha1.RolloutStep{Pause: p}
}

func analysis(template string) v1alpha1.RolloutStep {
	return v1alpha1.RolloutStep{Analysis: &v1alpha1.RolloutAnalysis{Templates: []v1alpha1.AnalysisTemplateRef{{ClusterTemplateName: template}}}}
}

// The example of personas.md: 10%, a pause of 30 minutes, an analysis,
// 50%, then promotion.
var example = []v1alpha1.RolloutStep{weight(10), pause("30m"), analysis("agent-task-success"), weight(50)}

func TestAdvanceThroughTheExample(t *testing.T) {
	in := Input{Persona: "reviewer", Steps: example, Canary: Start(7, t0), Now: t0}

	// Step 0 sets 10%, step 1 waits 30 minutes from then.
	d := Advance(in)
	if c := d.Canary; c.Weight != 10 || c.Step != 1 || c.Phase != v1alpha1.CanaryProgressing || d.RequeueAfter != 30*time.Minute || d.Promoted || d.Run != nil {
		t.Fatalf("at the start: %+v, requeue %v", c, d.RequeueAfter)
	}

	// 10 minutes on, 20 are left.
	in.Canary, in.Now = d.Canary, t0.Add(10*time.Minute)
	if d = Advance(in); d.Canary.Step != 1 || d.RequeueAfter != 20*time.Minute {
		t.Fatalf("10 minutes on: step %d, requeue %v", d.Canary.Step, d.RequeueAfter)
	}

	// 30 minutes on, the analysis step makes its run, named by the
	// persona, the revision and the step.
	in.Canary, in.Now = d.Canary, t0.Add(30*time.Minute)
	d = Advance(in)
	if c := d.Canary; c.Step != 2 || c.AnalysisRun != "reviewer-r7-s2" || d.Run == nil || d.Run.Name != "reviewer-r7-s2" ||
		d.Run.Analysis.Templates[0].ClusterTemplateName != "agent-task-success" || c.Weight != 10 {
		t.Fatalf("after the pause: %+v, run %+v", c, d.Run)
	}

	// Running: it waits, and still needs its run.
	in.Canary, in.Analysis = d.Canary, Analysis{Phase: AnalysisRunning}
	if d = Advance(in); d.Canary.Step != 2 || d.Run == nil || d.Promoted {
		t.Fatalf("while the run runs: %+v", d)
	}

	// Successful: 50%, then promoted past the last step.
	in.Canary, in.Analysis = d.Canary, Analysis{Phase: AnalysisSuccessful}
	d = Advance(in)
	if c := d.Canary; !d.Promoted || c.Weight != 100 || c.Step != 4 || c.AnalysisRun != "" || d.Why != "promoted after its 4 steps" {
		t.Fatalf("after a Successful run: %+v, %+v", c, d)
	}
}

func TestAnalysisOutcomes(t *testing.T) {
	atAnalysis := Start(7, t0)
	atAnalysis.Step, atAnalysis.Weight, atAnalysis.AnalysisRun = 2, 10, "reviewer-r7-s2"
	in := Input{Persona: "reviewer", Steps: example, Canary: atAnalysis, Now: t0}

	for _, phase := range []AnalysisPhase{AnalysisFailed, AnalysisError} {
		in.Analysis = Analysis{Phase: phase, Message: "success rate 0.71 < 0.9"}
		d := Advance(in)
		want := "AnalysisRun reviewer-r7-s2 is " + string(phase) + ": success rate 0.71 < 0.9"
		if c := d.Canary; !d.Aborted || c.Phase != v1alpha1.CanaryAborted || c.Weight != 0 || c.Message != want || d.Why != want || d.Terminate != "" {
			t.Errorf("%s: %+v, %+v; want aborted with %q", phase, c, d, want)
		}
		// An aborted canary stays as it is.
		again := in
		again.Canary, again.Analysis = d.Canary, Analysis{Phase: AnalysisSuccessful}
		if d2 := Advance(again); d2.Canary != d.Canary || d2.Aborted || d2.Promoted || d2.Run != nil {
			t.Errorf("%s: an aborted canary moved: %+v", phase, d2)
		}
	}

	in.Analysis = Analysis{Phase: AnalysisInconclusive, Message: "too few tasks"}
	d := Advance(in)
	if c := d.Canary; c.Phase != v1alpha1.CanaryPaused || c.Step != 2 || !strings.Contains(c.Message, "Inconclusive: too few tasks") {
		t.Fatalf("Inconclusive: %+v", c)
	}
	// A promote of another step, or of another revision, does nothing.
	for _, v := range []string{"7:1", "6:2", "7"} {
		in.Promote = v
		if d := Advance(in); d.Canary.Step != 2 || d.Canary.Phase != v1alpha1.CanaryPaused {
			t.Errorf("promote %q moved the canary: %+v", v, d.Canary)
		}
	}
	in.Promote = "7:2"
	if d := Advance(in); d.Canary.Step != 4 || !d.Promoted {
		t.Errorf("promote 7:2 at an Inconclusive run: %+v", d)
	}

	// The step waits without the CRD, and says what is missing.
	in.Promote, in.Analysis = "", Analysis{Missing: "the AnalysisRun CRD is not installed"}
	if d := Advance(in); d.Canary.Phase != v1alpha1.CanaryProgressing || d.Canary.Message != "the AnalysisRun CRD is not installed" || d.Run == nil {
		t.Errorf("without the CRD: %+v", d)
	}
}

func TestPausesAndCommands(t *testing.T) {
	steps := []v1alpha1.RolloutStep{weight(20), pause(""), weight(60), pause("")}
	in := Input{Persona: "reviewer", Steps: steps, Canary: Start(3, t0), Now: t0}
	d := Advance(in)
	if c := d.Canary; c.Phase != v1alpha1.CanaryPaused || c.Step != 1 || c.Weight != 20 || c.Message != "paused at step 1 until kubectl persona promote" {
		t.Fatalf("%+v", c)
	}
	// The promote of step 1 goes on to the next pause; left there, it
	// does not pass step 3.
	in.Canary, in.Promote = d.Canary, PromoteValue(3, 1)
	if d = Advance(in); d.Canary.Step != 3 || d.Canary.Weight != 60 || d.Canary.Phase != v1alpha1.CanaryPaused {
		t.Fatalf("after promote 3:1: %+v", d.Canary)
	}
	in.Canary = d.Canary
	if d = Advance(in); d.Canary.Step != 3 {
		t.Fatalf("a promote left over passed step 3: %+v", d.Canary)
	}
	// Abort names the revision; an abort of another does nothing.
	in.Abort = "2"
	if d := Advance(in); d.Aborted {
		t.Fatal("an abort of revision 2 aborted revision 3's canary")
	}
	in.Abort = AbortValue(3)
	if d := Advance(in); !d.Aborted || d.Canary.Weight != 0 || d.Why != "aborted with kubectl persona abort" {
		t.Fatalf("abort: %+v", d)
	}
	// --full promotes at once, and stops a run still going.
	in.Abort, in.Promote = "", PromoteFullValue(3)
	in.Canary.AnalysisRun, in.Analysis = "reviewer-r3-s9", Analysis{Phase: AnalysisRunning}
	if d := Advance(in); !d.Promoted || d.Canary.Weight != 100 || d.Terminate != "reviewer-r3-s9" {
		t.Fatalf("promote --full: %+v", d)
	}
}

func TestPauseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30m", 30 * time.Minute, true}, {"45s", 45 * time.Second, true}, {"2h", 2 * time.Hour, true}, {"90", 90 * time.Second, true},
		{"168h", 7 * 24 * time.Hour, true}, {"169h", 0, false}, {"1.5h", 0, false}, {"1d", 0, false}, {"-5", 0, false}, {"", 0, false}, {"10ms", 0, false},
	} {
		v := intstr.Parse(c.in)
		got, timed, err := PauseDuration(&v)
		if (err == nil) != c.ok || got != c.want || !timed {
			t.Errorf("%q: %v, %v, %v; want %v, ok %v", c.in, got, timed, err, c.want, c.ok)
		}
	}
	if _, timed, err := PauseDuration(nil); timed || err != nil {
		t.Error("no duration is not an untimed pause")
	}
}
