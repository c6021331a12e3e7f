package waves

import (
	"fmt"
	"testing"
	"time"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func restart(ns, name string, rev int64, cause Cause) Restart {
	return Restart{Workload: Workload{Kind: "Deployment", Namespace: ns, Name: name}, Persona: "p", Revision: rev, Cause: cause}
}

var edit = Cause{Kind: "PromptLayer", Namespace: "a", Name: "shared", Version: "2"}

func names(rs []Restart) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Workload.Namespace+"/"+r.Workload.Name)
	}
	return out
}

func TestAdmitHoldsTheLimit(t *testing.T) {
	s := New(5)
	for i := range 20 {
		s.Add(restart("a", fmt.Sprintf("w%02d", i), 2, edit))
	}
	first := s.Admit(now)
	if len(first) != 5 {
		t.Fatalf("admitted %d, want 5", len(first))
	}
	if more := s.Admit(now); len(more) != 0 {
		t.Fatalf("admitted %v past the limit", names(more))
	}
	if _, p, ok := s.Finish(first[0].Workload); !ok || p != (Progress{Done: 1, Total: 20}) {
		t.Fatalf("progress %+v %v, want 1 of 20", p, ok)
	}
	next := s.Admit(now)
	// Arrival order within a namespace: w05 is the sixth.
	if got := names(next); len(got) != 1 || got[0] != "a/w05" {
		t.Fatalf("admitted %v, want [a/w05]", got)
	}
	if c := s.Counts(); c != (Counts{Waiting: 14, Rolling: 5}) {
		t.Fatalf("counts %+v", c)
	}
}

func TestAdmitIsRoundRobinBetweenNamespaces(t *testing.T) {
	s := New(4)
	for i := range 10 {
		s.Add(restart("a", fmt.Sprintf("w%d", i), 2, edit))
	}
	s.Add(restart("b", "w0", 2, edit))
	s.Add(restart("c", "w0", 2, edit))
	got := names(s.Admit(now))
	want := []string{"a/w0", "b/w0", "c/w0", "a/w1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("admitted %v, want %v", got, want)
	}
}

func TestPriorityOvertakesTheQueue(t *testing.T) {
	s := New(1)
	for i := range 5 {
		s.Add(restart("a", fmt.Sprintf("w%d", i), 2, edit))
	}
	first := s.Admit(now)
	pin := restart("a", "pinned", 1, Cause{Kind: "Persona", Namespace: "a", Name: "p", Version: "pin/1"})
	pin.Priority = true
	s.Add(pin)
	s.Finish(first[0].Workload)
	if got := names(s.Admit(now)); fmt.Sprint(got) != "[a/pinned]" {
		t.Fatalf("admitted %v, want the pin's restart first", got)
	}
}

// A tenant's pins order its own restarts, and never overtake another's:
// the namespaces still take turns.
func TestPriorityStaysInItsNamespace(t *testing.T) {
	s := New(2)
	for i := range 3 {
		pin := restart("a", fmt.Sprintf("pinned%d", i), 1, Cause{Kind: "Persona", Namespace: "a", Name: "p", Version: "pin/1"})
		pin.Priority = true
		s.Add(pin)
	}
	for i := range 3 {
		s.Add(restart("b", fmt.Sprintf("w%d", i), 2, Cause{Kind: "PromptLayer", Namespace: "b", Name: "shared", Version: "2"}))
	}
	if got := names(s.Admit(now)); fmt.Sprint(got) != "[a/pinned0 b/w0]" {
		t.Fatalf("admitted %v, want one of each namespace", got)
	}
}

func TestWaitingKeepsOnlyTheNewestRevision(t *testing.T) {
	s := New(5)
	s.Add(restart("a", "w", 2, edit))
	newer := Cause{Kind: "PromptLayer", Namespace: "a", Name: "shared", Version: "3"}
	s.Add(restart("a", "w", 3, newer))
	got := s.Admit(now)
	if len(got) != 1 || got[0].Revision != 3 {
		t.Fatalf("admitted %+v, want revision 3 alone", got)
	}
	if _, p, _ := s.Finish(got[0].Workload); p != (Progress{Done: 1, Total: 1}) {
		t.Fatalf("progress %+v: the replaced restart still counts", p)
	}
}

func TestNewRevisionWaitsForTheRolloutInFlight(t *testing.T) {
	s := New(5)
	s.Add(restart("a", "w", 2, edit))
	s.Admit(now)
	s.Add(restart("a", "w", 3, Cause{Kind: "PromptLayer", Namespace: "a", Name: "shared", Version: "3"}))
	if got := s.Admit(now); len(got) != 0 {
		t.Fatalf("admitted %v while its previous rollout runs", names(got))
	}
	s.Finish(Workload{Kind: "Deployment", Namespace: "a", Name: "w"})
	if got := s.Admit(now); len(got) != 1 || got[0].Revision != 3 {
		t.Fatalf("admitted %+v, want revision 3", got)
	}
}

func TestFailHaltsOnlyItsNamespaceAndCause(t *testing.T) {
	s := New(1)
	guardrail := Cause{Kind: "ClusterPromptLayer", Name: "g", Version: "4"}
	s.Add(restart("a", "broken", 5, guardrail))
	first := s.Admit(now)
	s.Add(restart("a", "held", 5, guardrail))
	other := restart("a", "other-cause", 7, edit)
	s.Add(other)
	s.Add(restart("b", "elsewhere", 5, guardrail))
	_, held, ok := s.Fail(first[0].Workload)
	if !ok || fmt.Sprint(names(held)) != "[a/held]" {
		t.Fatalf("held %v, want [a/held]", names(held))
	}
	var admitted []string
	for {
		got := s.Admit(now)
		if len(got) == 0 {
			break
		}
		admitted = append(admitted, names(got)...)
		s.Finish(got[0].Workload)
	}
	// a's other cause and b's restart of the same cause go on; a/held waits.
	if fmt.Sprint(admitted) != "[a/other-cause b/elsewhere]" {
		t.Fatalf("admitted %v", admitted)
	}
	if c := s.Counts(); c != (Counts{Halted: 2}) {
		t.Fatalf("counts %+v, want the failed and the held one halted", c)
	}
	// A restart still waiting on an older version of the guardrail lifts nothing.
	older := guardrail
	older.Version = "3"
	s.Add(restart("b", "late", 5, older))
	s.Add(restart("a", "held", 5, older))
	if got := names(s.Admit(now)); fmt.Sprint(got) != "[b/late]" {
		t.Fatalf("admitted %v, want b/late alone: a stays halted", got)
	}
	s.Finish(Workload{Kind: "Deployment", Namespace: "b", Name: "late"})
	if got := names(s.Admit(now)); len(got) != 0 {
		t.Fatalf("admitted %v: an older version of the cause lifted a's halt", got)
	}
	// The guardrail's next version resumes a.
	next := guardrail
	next.Version = "5"
	s.Add(restart("a", "held", 6, next))
	if got := names(s.Admit(now)); fmt.Sprint(got) != "[a/held]" {
		t.Fatalf("admitted %v, want the resumed a/held", got)
	}
}

func TestFailWithNothingWaiting(t *testing.T) {
	s := New(1)
	s.Add(restart("a", "alone", 2, edit))
	got := s.Admit(now)
	r, held, ok := s.Fail(got[0].Workload)
	if !ok || r.Workload.Name != "alone" || len(held) != 0 {
		t.Fatalf("Fail = %+v, %v, %v; want the restart of a/alone, nothing held", r, names(held), ok)
	}
	if !s.Halted("a", edit) {
		t.Fatalf("a's restarts of the cause not halted")
	}
	// A workload of the same cause that arrives later waits for the next version.
	s.Add(restart("a", "later", 2, edit))
	if got := s.Admit(now); len(got) != 0 {
		t.Fatalf("admitted %v while halted", names(got))
	}
}

func TestAdoptedRolloutsCountAgainstTheLimit(t *testing.T) {
	s := New(2)
	s.Adopt(restart("a", "x", 2, edit), now)
	s.Adopt(restart("a", "y", 2, edit), now)
	s.Add(restart("a", "z", 2, edit))
	if got := s.Admit(now); len(got) != 0 {
		t.Fatalf("admitted %v past two adopted rollouts", names(got))
	}
	if _, since, ok := s.Rolling(Workload{Kind: "Deployment", Namespace: "a", Name: "x"}); !ok || !since.Equal(now) {
		t.Fatalf("x not rolling since now")
	}
}

// A restart whose write failed waits again, held back 5 s, then 10 s after
// a second failure; a write that succeeds ends the backoff.
func TestAbortPutsBackWithABackoff(t *testing.T) {
	s := New(1)
	s.Add(restart("a", "w", 2, edit))
	got := s.Admit(now)
	s.Abort(got[0], now)
	if again := s.Admit(now.Add(4 * time.Second)); len(again) != 0 {
		t.Fatalf("aborted restart admitted again within 5 s")
	}
	if d, ok := s.NextRetry(now); !ok || d != 5*time.Second {
		t.Fatalf("next retry in %s (%v), want 5s", d, ok)
	}
	at := now.Add(5 * time.Second)
	if _, ok := s.NextRetry(at); ok {
		t.Fatal("a restart whose backoff is over still counts as held back")
	}
	got = s.Admit(at)
	if len(got) != 1 {
		t.Fatalf("aborted restart not admitted again after 5 s")
	}
	s.Abort(got[0], at)
	if d, _ := s.NextRetry(at); d != 10*time.Second {
		t.Fatalf("after a second failure the next retry is in %s, want 10s", d)
	}
	at = at.Add(10 * time.Second)
	got = s.Admit(at)
	s.Wrote(got[0].Workload)
	s.Finish(got[0].Workload)
	s.Add(restart("a", "w", 3, edit))
	if again := s.Admit(at); len(again) != 1 {
		t.Fatal("a written restart's next revision is held back")
	}
}

// A restart held back by failed writes takes neither a slot nor a turn:
// while it waits out its backoff every slot goes to the others.
func TestAHeldBackRestartTakesNoSlot(t *testing.T) {
	s := New(4)
	s.Add(restart("refused", "w", 2, edit))
	got := s.Admit(now)
	s.Abort(got[0], now)
	for i := range 6 {
		s.Add(restart("busy", fmt.Sprintf("w%d", i), 2, edit))
	}
	got = s.Admit(now)
	if want := []string{"busy/w0", "busy/w1", "busy/w2", "busy/w3"}; fmt.Sprint(names(got)) != fmt.Sprint(want) {
		t.Fatalf("admitted %v, want %v: refused's restart waits out its backoff", names(got), want)
	}
}

func TestForget(t *testing.T) {
	s := New(1)
	s.Add(restart("a", "w", 2, edit))
	s.Add(restart("a", "v", 2, edit))
	s.Admit(now)
	s.Forget(Workload{Kind: "Deployment", Namespace: "a", Name: "w"})
	s.Forget(Workload{Kind: "Deployment", Namespace: "a", Name: "v"})
	if c := s.Counts(); c != (Counts{}) {
		t.Fatalf("counts %+v after forgetting both", c)
	}
}

// A namespace whose rollouts never complete, each of a cause of its own so
// that no halt stops the next, is held to its share of the limit while
// another namespace waits: round-robin alone would hand it every slot the
// other's quick rollouts free, until it held them all. Once nothing else
// waits it takes the free slots again.
func TestANamespaceIsHeldToItsShareWhileOthersWait(t *testing.T) {
	s := New(4)
	for i := range 10 {
		s.Add(restart("slow", fmt.Sprintf("w%d", i), 2, Cause{Kind: "Persona", Namespace: "slow", Name: fmt.Sprintf("p%d", i), Version: "1"}))
		s.Add(restart("quick", fmt.Sprintf("w%d", i), 2, edit))
	}
	rollingIn := func(ns string) (n int, ws []Workload) {
		for w := range s.rolling {
			if w.Namespace == ns {
				n++
				ws = append(ws, w)
			}
		}
		return n, ws
	}
	s.Admit(now)
	for round := range 4 {
		_, quick := rollingIn("quick")
		for _, w := range quick {
			s.Finish(w)
		}
		s.Admit(now)
		slow, _ := rollingIn("slow")
		if n, _ := rollingIn("quick"); slow != 2 || n != 2 {
			t.Fatalf("round %d: slow rolls out %d and quick %d, want 2 and 2 (half the limit each)", round, slow, n)
		}
	}
	for _, w := range s.waitingIn("quick") {
		s.Forget(w)
	}
	_, quick := rollingIn("quick")
	for _, w := range quick {
		s.Finish(w)
	}
	s.Admit(now)
	if slow, _ := rollingIn("slow"); slow != 4 {
		t.Fatalf("with nothing else waiting slow rolls out %d, want the limit, 4", slow)
	}
}

// waitingIn are the workloads of ns waiting.
func (s *Scheduler) waitingIn(ns string) []Workload {
	var out []Workload
	for w := range s.waiting {
		if w.Namespace == ns {
			out = append(out, w)
		}
	}
	return out
}
