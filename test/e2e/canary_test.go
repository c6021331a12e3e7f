package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/inject"
)

// A prompt release on the node (docs/releases.md): agents that run one pod
// per task, as Jobs, of a Persona in the middle of a canary.
const (
	releasePersona = "release"
	// canaryTasks are the tasks started while the canary takes half of the
	// new pods: all of them on one revision has odds of 2 in 2^16.
	canaryTasks = 16
	// abortedTasks are the tasks started after the abort.
	abortedTasks = 6
)

// taskRead is what a task's pod is and what its agent read.
type taskRead struct {
	pod, track, revision string
	// prompt is the digest of the prompt the agent read; revisionEnv its
	// PERSONA_REVISION.
	prompt, revisionEnv string
}

// canaryTasksRunBothRevisions: in the middle of a canary at 50%, each new
// task's pod gets the revision its labels name, and reads that revision's
// prompt; both revisions run. After an abort, every new task gets the
// stable revision, and the canary's tasks still running are left alone.
func (s *suite) canaryTasksRunBothRevisions(t *testing.T) {
	t.Cleanup(func() { s.deleteTasks(t) })
	half := int32(50)
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: restartNamespace, Name: releasePersona},
		Spec: taskPrompt("Review the change. (stable)\n")}
	p.Spec.Rollout = &v1alpha1.Rollout{Steps: []v1alpha1.RolloutStep{{SetWeight: &half}, {Pause: &v1alpha1.RolloutPause{}}}}
	if err := s.c.Create(s.ctx, p); err != nil {
		t.Fatal(err)
	}
	stable, err := s.waitRevision(releasePersona, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.editPersona(releasePersona, "Review the change and its tests. (canary)\n"); err != nil {
		t.Fatal(err)
	}
	canary, err := s.waitCanary(v1alpha1.CanaryPaused)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, n := range []int64{stable, canary} {
		if want[strconv.FormatInt(n, 10)], err = s.restartSnapshotPrompt(releasePersona, n); err != nil {
			t.Fatal(err)
		}
	}

	during, err := s.runTasks("during", canaryTasks)
	if err != nil {
		t.Fatal(err)
	}
	onCanary := map[string]taskRead{}
	for _, r := range during {
		s.checkTask(t, r, want)
		if r.track == v1alpha1.TrackCanary {
			onCanary[r.pod] = r
		}
	}
	if len(onCanary) == 0 || len(onCanary) == len(during) {
		t.Fatalf("%d of %d tasks' pods got the canary at 50%%: both revisions must run", len(onCanary), len(during))
	}

	if err := s.annotatePersona(releasePersona, v1alpha1.AbortAnnotation, strconv.FormatInt(canary, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.waitCanary(v1alpha1.CanaryAborted); err != nil {
		t.Fatal(err)
	}
	after, err := s.runTasks("after", abortedTasks)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range after {
		s.checkTask(t, r, want)
		if r.track != v1alpha1.TrackStable {
			t.Errorf("pod %s, started after the abort, got track %q revision %s: want the stable revision %d", r.pod, r.track, r.revision, stable)
		}
	}
	// The canary's running tasks are left alone: the same pods, running,
	// their agents still reading the canary's prompt.
	for name, r := range onCanary {
		var pod corev1.Pod
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: name}, &pod); err != nil {
			t.Errorf("the canary's task pod %s after the abort: %v", name, err)
			continue
		}
		if err := s.running(&pod); err != nil || pod.DeletionTimestamp != nil {
			t.Errorf("the canary's task pod %s after the abort: %v, deleting %v", name, err, pod.DeletionTimestamp != nil)
			continue
		}
		turns, err := s.node.agentTurns(restartNamespace, name, "agent")
		if err != nil || len(turns) == 0 {
			t.Errorf("pod %s: no turn: %v", name, err)
			continue
		}
		if got := turns[len(turns)-1].Prompt; got != r.prompt {
			t.Errorf("the canary's task pod %s reads %.19s after the abort, %.19s before", name, got, r.prompt)
		}
	}
	t.Logf("canary revision %d at 50%%: %d of %d tasks' pods got it, each reading its prompt; after the abort %d of %d new tasks got stable revision %d, and the canary's %d running tasks were left running on revision %d",
		canary, len(onCanary), len(during), len(after), abortedTasks, stable, len(onCanary), canary)
}

// checkTask checks that a task's pod mounts the revision its label names:
// its PERSONA_REVISION and the prompt its agent read are that revision's.
func (s *suite) checkTask(t *testing.T, r taskRead, prompts map[string]string) {
	t.Helper()
	if r.revisionEnv != r.revision || r.prompt != prompts[r.revision] {
		t.Errorf("pod %s (track %s, revision label %s) has PERSONA_REVISION %s and read %.19s; revision %s's prompt is %.19s",
			r.pod, r.track, r.revision, r.revisionEnv, r.prompt, r.revision, prompts[r.revision])
	}
}

// runTasks creates n Jobs of releasePersona named <prefix>-<i>, waits until
// each one's pod runs and its agent read its prompt, and returns what each
// read.
func (s *suite) runTasks(prefix string, n int) ([]taskRead, error) {
	for i := range n {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: restartNamespace, Name: name, Labels: map[string]string{partOf: releasePersona}},
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{partOf: releasePersona, delivery.PersonaLabel: releasePersona}},
					Spec: corev1.PodSpec{
						RestartPolicy:                 corev1.RestartPolicyNever,
						TerminationGracePeriodSeconds: ptr.To[int64](1),
						Containers:                    []corev1.Container{agentContainer()},
					},
				},
			},
		}
		if err := s.c.Create(s.ctx, job); err != nil {
			return nil, fmt.Errorf("create Job %s: %w", name, err)
		}
	}
	var out []taskRead
	for i := range n {
		job := fmt.Sprintf("%s-%02d", prefix, i)
		var r taskRead
		err := waitFor(2*time.Minute, "the pod of Job "+job+" reading its prompt", func() (bool, error) {
			var pods corev1.PodList
			if err := s.c.List(s.ctx, &pods, client.InNamespace(restartNamespace), client.MatchingLabels{batchv1.JobNameLabel: job}); err != nil {
				return false, err
			}
			if len(pods.Items) != 1 {
				return false, fmt.Errorf("%d pods", len(pods.Items))
			}
			pod := &pods.Items[0]
			if err := s.running(pod); err != nil {
				return false, err
			}
			turns, err := s.node.agentTurns(restartNamespace, pod.Name, "agent")
			if err != nil || len(turns) == 0 {
				return false, fmt.Errorf("pod %s: no turn: %v", pod.Name, err)
			}
			if turns[0].Error != "" {
				return false, fmt.Errorf("pod %s: %s", pod.Name, turns[0].Error)
			}
			r = taskRead{pod: pod.Name, track: pod.Labels[inject.TrackLabel], revision: pod.Labels[inject.RevisionLabel],
				prompt: turns[0].Prompt, revisionEnv: turns[0].Revision}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// waitCanary waits for releasePersona's canary to reach phase, and returns
// its revision.
func (s *suite) waitCanary(phase v1alpha1.CanaryPhase) (int64, error) {
	var revision int64
	err := waitFor(time.Minute, fmt.Sprintf("persona %s's canary %s", releasePersona, phase), func() (bool, error) {
		var p v1alpha1.Persona
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: releasePersona}, &p); err != nil {
			return false, err
		}
		c := p.Status.Canary
		if c == nil {
			return false, fmt.Errorf("no canary; current revision %d, latest %d", p.Status.CurrentRevision, p.Status.LatestRevision)
		}
		revision = c.Revision
		return c.Phase == phase, fmt.Errorf("canary revision %d %s at step %d: %s", c.Revision, c.Phase, c.Step, c.Message)
	})
	return revision, err
}

// annotatePersona sets an annotation on a Persona of restartNamespace, as
// kubectl persona promote and abort do.
func (s *suite) annotatePersona(name, key, value string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &v1alpha1.Persona{}
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: name}, p); err != nil {
			return err
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
		return s.c.Update(s.ctx, p)
	})
}

// restartSnapshotPrompt is the digest of system-prompt.md in the snapshot
// of revision n of a Persona of restartNamespace.
func (s *suite) restartSnapshotPrompt(name string, n int64) (string, error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: delivery.SnapshotName(name, n)}, &cm); err != nil {
		return "", err
	}
	return digest([]byte(cm.Data["system-prompt.md"])), nil
}

// deleteTasks deletes the release's Jobs, their pods and its Persona.
func (s *suite) deleteTasks(t *testing.T) {
	err := s.c.DeleteAllOf(s.ctx, &batchv1.Job{}, client.InNamespace(restartNamespace), client.MatchingLabels{partOf: releasePersona},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil {
		t.Errorf("delete the release's Jobs: %v", err)
	}
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: restartNamespace, Name: releasePersona}}
	if err := s.c.Delete(s.ctx, p); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete Persona %s: %v", releasePersona, err)
	}
	if err := waitFor(2*time.Minute, "the release's task pods gone", func() (bool, error) {
		var pods corev1.PodList
		if err := s.c.List(s.ctx, &pods, client.InNamespace(restartNamespace), client.MatchingLabels{partOf: releasePersona}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d pods left", len(pods.Items))
	}); err != nil {
		t.Error(err)
	}
}
