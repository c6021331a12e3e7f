package release

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// AnalysisPhase is an AnalysisRun's status.phase, as Argo Rollouts writes
// it; "" while the run has none, or does not exist yet.
type AnalysisPhase string

// The phases of an AnalysisRun.
const (
	AnalysisPending      AnalysisPhase = "Pending"
	AnalysisRunning      AnalysisPhase = "Running"
	AnalysisSuccessful   AnalysisPhase = "Successful"
	AnalysisFailed       AnalysisPhase = "Failed"
	AnalysisError        AnalysisPhase = "Error"
	AnalysisInconclusive AnalysisPhase = "Inconclusive"
)

// Analysis is what is known of the AnalysisRun of the step a canary is at.
type Analysis struct {
	Phase   AnalysisPhase
	Message string
	// Missing says why the run cannot be made (no AnalysisRun CRD, a
	// template missing or not labelled): the step waits, and says so.
	Missing string
}

// Input is what a canary's next move depends on.
type Input struct {
	// Persona names the Persona, for the AnalysisRun's name.
	Persona string
	Steps   []v1alpha1.RolloutStep
	Canary  v1alpha1.CanaryStatus
	Now     time.Time
	// Promote and Abort are the values of the Persona's promote and abort
	// annotations ("" without them).
	Promote, Abort string
	Analysis       Analysis
}

// Decision is a canary's next move.
type Decision struct {
	// Canary is its status after the move.
	Canary v1alpha1.CanaryStatus
	// Promoted is set when the canary is done: its revision becomes the
	// stable one. Aborted is set when it was aborted by this move. Why
	// says by what, for the Event and the history.
	Promoted, Aborted bool
	Why               string
	// Run is the AnalysisRun the step the canary is at needs, to be made
	// when it does not exist; nil at other steps.
	Run *Run
	// Terminate names a run that is still going and no longer needed.
	Terminate string
	// RequeueAfter is when a timed pause ends.
	RequeueAfter time.Duration
}

// Run is an AnalysisRun an analysis step needs.
type Run struct {
	Name     string
	Analysis v1alpha1.RolloutAnalysis
}

// RunName is the AnalysisRun of persona's canary revision at step: named
// by them, so that a retried reconcile finds the run it made.
func RunName(persona string, revision int64, step int32) string {
	return fmt.Sprintf("%s-r%d-s%d", persona, revision, step)
}

// PromoteValue is the promote annotation's value that goes past step of
// revision's canary; PromoteFullValue, the one that promotes it at once.
func PromoteValue(revision int64, step int32) string {
	return fmt.Sprintf("%d:%d", revision, step)
}

// PromoteFullValue promotes revision's canary at once.
func PromoteFullValue(revision int64) string { return fmt.Sprintf("%d:full", revision) }

// AbortValue aborts revision's canary.
func AbortValue(revision int64) string { return strconv.FormatInt(revision, 10) }

// Start is the status of a canary of revision beginning now: at step 0,
// with no share of the pods until a setWeight step gives it one.
func Start(revision int64, now time.Time) v1alpha1.CanaryStatus {
	t := metav1.NewTime(now)
	return v1alpha1.CanaryStatus{Revision: revision, StartTime: t, StepStartTime: t, Phase: v1alpha1.CanaryProgressing}
}

// Advance moves a canary through its steps as far as it can go now: a
// setWeight step sets the share and goes on; a timed pause goes on once its
// time is up; a pause without a duration waits for the promote annotation
// naming its step; an analysis step makes its run, goes on once it is
// Successful, aborts when it is Failed or Error, and pauses, until a
// promote, when it is Inconclusive. The abort annotation, or the promote
// annotation's full promotion, naming the canary's revision acts at any
// step. Past the last step the canary is promoted. An aborted canary stays
// as it is.
func Advance(in Input) Decision {
	c := in.Canary
	d := Decision{}
	if c.Phase == v1alpha1.CanaryAborted {
		d.Canary = c
		return d
	}
	runGoing := c.AnalysisRun != "" && !in.Analysis.Phase.Completed()
	switch {
	case in.Abort == AbortValue(c.Revision):
		return abort(d, c, runGoing, "aborted with kubectl persona abort")
	case in.Promote == PromoteFullValue(c.Revision):
		if runGoing {
			d.Terminate = c.AnalysisRun
		}
		c.AnalysisRun, c.Weight, c.Message = "", 100, ""
		d.Canary, d.Promoted, d.Why = c, true, "promoted at once with kubectl persona promote --full"
		return d
	}
	next := func() {
		c.Step++
		c.StepStartTime = metav1.NewTime(in.Now)
		c.Phase, c.Message = v1alpha1.CanaryProgressing, ""
	}
	promotedHere := func() bool { return in.Promote == PromoteValue(c.Revision, c.Step) }
	for int(c.Step) < len(in.Steps) {
		step := in.Steps[c.Step]
		switch {
		case step.SetWeight != nil:
			c.Weight = *step.SetWeight
			next()
		case step.Pause != nil:
			if promotedHere() {
				next()
				continue
			}
			wait, timed, err := PauseDuration(step.Pause.Duration)
			if err != nil {
				// Admission refuses such a duration; one written before
				// it did waits for a promote, as a pause without one.
				timed = false
			}
			if !timed {
				c.Phase = v1alpha1.CanaryPaused
				c.Message = fmt.Sprintf("paused at step %d until kubectl persona promote", c.Step)
				d.Canary = c
				return d
			}
			if end := c.StepStartTime.Add(wait); in.Now.Before(end) {
				c.Phase, c.Message = v1alpha1.CanaryProgressing, ""
				d.Canary, d.RequeueAfter = c, end.Sub(in.Now)
				return d
			}
			next()
		case step.Analysis != nil:
			if c.AnalysisRun == "" {
				c.AnalysisRun = RunName(in.Persona, c.Revision, c.Step)
				in.Analysis = Analysis{Missing: in.Analysis.Missing}
			}
			switch in.Analysis.Phase {
			case AnalysisSuccessful:
				c.AnalysisRun = ""
				next()
				continue
			case AnalysisFailed, AnalysisError:
				return abort(d, c, false, fmt.Sprintf("AnalysisRun %s is %s: %s", c.AnalysisRun, in.Analysis.Phase, messageOr(in.Analysis.Message)))
			case AnalysisInconclusive:
				if promotedHere() {
					c.AnalysisRun = ""
					next()
					continue
				}
				c.Phase = v1alpha1.CanaryPaused
				c.Message = fmt.Sprintf("AnalysisRun %s is Inconclusive: %s; paused at step %d until kubectl persona promote", c.AnalysisRun,
					messageOr(in.Analysis.Message), c.Step)
				d.Canary = c
				return d
			}
			c.Phase, c.Message = v1alpha1.CanaryProgressing, in.Analysis.Missing
			d.Canary = c
			d.Run = &Run{Name: c.AnalysisRun, Analysis: *step.Analysis}
			return d
		default:
			// A step with nothing set, which admission refuses, is passed.
			next()
		}
	}
	c.Weight, c.Message = 100, ""
	d.Canary, d.Promoted, d.Why = c, true, fmt.Sprintf("promoted after its %d steps", len(in.Steps))
	return d
}

func abort(d Decision, c v1alpha1.CanaryStatus, runGoing bool, why string) Decision {
	if runGoing {
		d.Terminate = c.AnalysisRun
	}
	c.Phase, c.Weight, c.Message = v1alpha1.CanaryAborted, 0, why
	d.Canary, d.Aborted, d.Why = c, true, why
	return d
}

// Completed reports whether a run of phase p is over.
func (p AnalysisPhase) Completed() bool {
	switch p {
	case AnalysisSuccessful, AnalysisFailed, AnalysisError, AnalysisInconclusive:
		return true
	}
	return false
}

func messageOr(m string) string {
	if m = strings.TrimSpace(m); m != "" {
		return m
	}
	return "no message"
}
