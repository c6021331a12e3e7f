// Package waves paces the restarts of workloads onto a Persona's new
// revision (delivery.md#restarts-on-change): at most a limit rolling out at
// once, shared round-robin between namespaces, each held to its share of
// the limit while others wait, pins and guardrail changes
// first, and a failed rollout halting only its own namespace's restarts of
// the same cause. It holds no client: the controller tells it what it sees
// and does what it admits.
package waves

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/persona-operator/persona-operator/internal/fairshare"
)

// Workload is a Deployment, StatefulSet or DaemonSet.
type Workload struct{ Kind, Namespace, Name string }

// Cause is the object whose change made a revision, at its version
// (generation or resourceVersion): a new version of the same object is the
// cause's next revision, which resumes its halted restarts.
type Cause struct {
	Kind, Namespace, Name string
	Version               string
}

// Object is the cause without its version.
func (c Cause) Object() Cause { c.Version = ""; return c }

// Restart is a workload to be restarted onto a revision of its Persona.
type Restart struct {
	Workload Workload
	Persona  string
	Revision int64
	Cause    Cause
	// Priority restarts (pins, unpins, guardrail changes) go first.
	Priority bool
}

// halt is a namespace's restarts of one cause object that a failed rollout
// stopped, at the cause's version.
type halt struct {
	namespace string
	cause     Cause // without version
}

type rolling struct {
	Restart
	since time.Time
}

// Progress is how far the restarts of one cause are.
type Progress struct{ Done, Total int }

// Counts are the figures of the metrics.
type Counts struct{ Waiting, Rolling, Halted int }

// Scheduler holds the waiting, rolling and halted restarts. It is safe
// for concurrent use.
type Scheduler struct {
	mu    sync.Mutex
	limit int

	waiting map[Workload]Restart
	// queues are each namespace's waiting workloads in arrival order, one
	// for priority restarts and one for the others; namespaces is the
	// round-robin ring of namespaces with waiting restarts, next its cursor.
	queues     map[string]*[2][]Workload
	namespaces []string
	next       int

	rolling map[Workload]rolling
	// rollingIn counts each namespace's rolling workloads.
	rollingIn map[string]int
	// retries hold back a workload whose restart could not be written.
	retries map[Workload]retry
	// failed are the workloads whose rollout failed, until their next
	// restart or their rollout completes after all.
	failed map[Workload]Restart
	halts  map[halt]string // the cause's version halted

	progress map[Cause]*Progress
}

// New is a scheduler that lets at most limit workloads roll out at once.
func New(limit int) *Scheduler {
	return &Scheduler{limit: max(limit, 1), waiting: map[Workload]Restart{}, queues: map[string]*[2][]Workload{},
		rolling: map[Workload]rolling{}, rollingIn: map[string]int{}, retries: map[Workload]retry{},
		failed: map[Workload]Restart{}, halts: map[halt]string{}, progress: map[Cause]*Progress{}}
}

// retry is when a workload whose restart could not be written may be
// admitted again, after how many failed writes in a row.
type retry struct {
	notBefore time.Time
	failures  int
}

// Retry backoff: 5 s after a failed write, doubling to at most 5 minutes.
const (
	firstRetry = 5 * time.Second
	lastRetry  = 5 * time.Minute
)

func (s *Scheduler) startRolling(r Restart, now time.Time) {
	s.rolling[r.Workload] = rolling{Restart: r, since: now}
	s.rollingIn[r.Workload.Namespace]++
}

func (s *Scheduler) stopRolling(w Workload) {
	delete(s.rolling, w)
	if s.rollingIn[w.Namespace]--; s.rollingIn[w.Namespace] <= 0 {
		delete(s.rollingIn, w.Namespace)
	}
}

func haltOf(r Restart) halt { return halt{namespace: r.Workload.Namespace, cause: r.Cause.Object()} }

// Add makes r wait, in place of any restart of the same workload still
// waiting: a waiting workload keeps only its newest revision. A workload
// already rolling out onto r's revision is left alone. A new version of a
// halted cause resumes that namespace's restarts of it.
func (s *Scheduler) Add(r Restart) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.rolling[r.Workload]; ok && cur.Revision == r.Revision {
		return
	}
	if v, ok := s.halts[haltOf(r)]; ok && newer(r.Cause.Version, v) {
		delete(s.halts, haltOf(r))
	}
	if old, ok := s.waiting[r.Workload]; ok {
		if old == r {
			return
		}
		s.countOut(old)
		s.unqueue(old)
	}
	if f, ok := s.failed[r.Workload]; ok && f.Revision != r.Revision {
		delete(s.failed, r.Workload)
	}
	s.waiting[r.Workload] = r
	s.countIn(r)
	s.enqueue(r)
}

// Adopt records r as rolling out since now without admitting it: a rollout
// a previous leader started, found still running. It counts against the
// limit, which it may exceed.
func (s *Scheduler) Adopt(r Restart, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rolling[r.Workload]; ok {
		return
	}
	if old, ok := s.waiting[r.Workload]; ok {
		s.countOut(old)
		s.unqueue(old)
		delete(s.waiting, r.Workload)
	}
	s.startRolling(r, now)
	s.countIn(r)
}

// Rolling is the restart w is rolling out, and since when.
func (s *Scheduler) Rolling(w Workload) (Restart, time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rolling[w]
	return r.Restart, r.since, ok
}

// Admit moves waiting restarts to rolling, since now, until the limit is
// reached, and returns them: one namespace at a time, round-robin, and in
// each namespace's turn its priority restarts first, skipping halted ones
// and those held back after a failed write. Priority orders a namespace's
// own restarts and never another's: a tenant that pins and unpins does not
// overtake other tenants.
//
// While several namespaces have restarts waiting, one that already rolls
// out its share of the limit (the limit divided by those namespaces, at
// least 1) is passed over, so that a namespace whose rollouts take long, or
// never complete until --restart-deadline, cannot come to hold every slot;
// a slot no namespace under its share can take goes round as before.
func (s *Scheduler) Admit(now time.Time) []Restart {
	s.mu.Lock()
	defer s.mu.Unlock()
	share := 0
	if n := s.namespacesWaiting(now); n > 1 {
		share = fairshare.Share(s.limit, n)
	}
	var out []Restart
	for len(s.rolling) < s.limit {
		r, ok := s.take(now, share)
		if !ok {
			break
		}
		s.startRolling(r, now)
		out = append(out, r)
	}
	return out
}

// take removes and returns the next admissible restart, going round the
// namespaces from the cursor, priority first in each: first those under
// share (0: no share), then any.
func (s *Scheduler) take(now time.Time, share int) (Restart, bool) {
	for _, fair := range []bool{true, false} {
		if !fair && share == 0 {
			break // the first round went round every namespace already
		}
		for i := range len(s.namespaces) {
			at := (s.next + i) % len(s.namespaces)
			ns := s.namespaces[at]
			if fair && share > 0 && s.rollingIn[ns] >= share {
				continue
			}
			for class := range 2 {
				if r, ok := s.takeFrom(ns, at, class, now); ok {
					return r, true
				}
			}
		}
	}
	return Restart{}, false
}

// namespacesWaiting counts the namespaces with an admissible restart waiting.
func (s *Scheduler) namespacesWaiting(now time.Time) int {
	n := 0
	admissible := func(w Workload) bool { return s.admissible(w, now) }
	for _, ns := range s.namespaces {
		if slices.ContainsFunc(s.queues[ns][:], func(q []Workload) bool { return slices.ContainsFunc(q, admissible) }) {
			n++
		}
	}
	return n
}

// admissible reports whether w's waiting restart may be admitted: w is not
// rolling out onto an older revision, which finishes first, its cause is
// not halted in its namespace, and no failed write holds it back.
func (s *Scheduler) admissible(w Workload, now time.Time) bool {
	if _, busy := s.rolling[w]; busy {
		return false
	}
	if now.Before(s.retries[w].notBefore) {
		return false
	}
	r := s.waiting[w]
	v, halted := s.halts[haltOf(r)]
	return !halted || newer(r.Cause.Version, v)
}

// takeFrom removes and returns the first admissible restart of class in
// namespace ns, at index at of the namespaces, and moves the cursor past it.
func (s *Scheduler) takeFrom(ns string, at, class int, now time.Time) (Restart, bool) {
	q := &s.queues[ns][class]
	for j, w := range *q {
		if !s.admissible(w, now) {
			continue
		}
		r := s.waiting[w]
		*q = slices.Delete(*q, j, j+1)
		delete(s.waiting, w)
		s.dropEmpty(ns)
		// The next turn is the following namespace's.
		if n := len(s.namespaces); n > 0 {
			if idx := slices.Index(s.namespaces, ns); idx >= 0 {
				s.next = (idx + 1) % n
			} else {
				s.next = at % n
			}
		}
		return r, true
	}
	return Restart{}, false
}

// Abort puts back a restart Admit returned whose write failed, at now: it
// waits behind its namespace's others, and is not admitted again for 5 s,
// doubling with each failed write in a row to at most 5 minutes, so that a
// write that always fails takes no slot or turn from anyone else.
func (s *Scheduler) Abort(r Restart, now time.Time) {
	s.mu.Lock()
	cur, ok := s.rolling[r.Workload]
	if ok && cur.Restart == r {
		s.stopRolling(r.Workload)
		s.countOut(r)
	}
	rt := s.retries[r.Workload]
	rt.failures++
	rt.notBefore = now.Add(min(firstRetry<<min(rt.failures-1, 16), lastRetry))
	s.retries[r.Workload] = rt
	s.mu.Unlock()
	s.Add(r)
}

// NextRetry is how long until the first restart a failed write still holds
// back may be admitted again; ok is false when none is held back.
func (s *Scheduler) NextRetry(now time.Time) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for w, rt := range s.retries {
		if _, waits := s.waiting[w]; waits && rt.notBefore.After(now) && (next.IsZero() || rt.notBefore.Before(next)) {
			next = rt.notBefore
		}
	}
	if next.IsZero() {
		return 0, false
	}
	return next.Sub(now), true
}

// Wrote records that w's restart was written: its failed writes are over.
func (s *Scheduler) Wrote(w Workload) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.retries, w)
}

// Finish records w's rollout as complete, and returns the progress of its
// cause; ok is false when w was not rolling.
func (s *Scheduler) Finish(w Workload) (Restart, Progress, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.failed, w)
	r, ok := s.rolling[w]
	if !ok {
		return Restart{}, Progress{}, false
	}
	s.stopRolling(w)
	return r.Restart, s.done(r.Restart), true
}

// Fail records w's rollout as failed: it no longer counts against the
// limit, and its namespace's waiting restarts of the same cause halt until
// the cause's next version. It returns the restart and the waiting ones it
// halts.
func (s *Scheduler) Fail(w Workload) (Restart, []Restart, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rolling[w]
	if !ok {
		return Restart{}, nil, false
	}
	s.stopRolling(w)
	s.countOut(r.Restart)
	s.failed[w] = r.Restart
	h := haltOf(r.Restart)
	s.halts[h] = r.Cause.Version
	var held []Restart
	if queues := s.queues[w.Namespace]; queues != nil { // nil: nothing waits there
		for _, q := range queues {
			for _, o := range q {
				if wr := s.waiting[o]; haltOf(wr) == h && !newer(wr.Cause.Version, r.Cause.Version) {
					held = append(held, wr)
				}
			}
		}
	}
	return r.Restart, held, true
}

// Halted says whether a waiting restart of cause in namespace is halted.
func (s *Scheduler) Halted(namespace string, cause Cause) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.halts[halt{namespace: namespace, cause: cause.Object()}]
	return ok && !newer(cause.Version, v)
}

// PersonaHalted reports whether a restart of persona's workloads in
// namespace is halted: a failed rollout, or a waiting restart a halt holds.
func (s *Scheduler) PersonaHalted(namespace, persona string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w, r := range s.failed {
		if w.Namespace == namespace && r.Persona == persona {
			return true
		}
	}
	for w, r := range s.waiting {
		if w.Namespace == namespace && r.Persona == persona {
			if v, ok := s.halts[haltOf(r)]; ok && !newer(r.Cause.Version, v) {
				return true
			}
		}
	}
	return false
}

// Forget drops every record of w: it is gone, or no longer opted in. It
// returns the Personas its restarts were of, whose halts may be over.
func (s *Scheduler) Forget(w Workload) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var personas []string
	if r, ok := s.waiting[w]; ok {
		s.countOut(r)
		s.unqueue(r)
		delete(s.waiting, w)
		personas = append(personas, r.Persona)
	}
	if r, ok := s.rolling[w]; ok {
		s.countOut(r.Restart)
		s.stopRolling(w)
		personas = append(personas, r.Persona)
	}
	if r, ok := s.failed[w]; ok {
		delete(s.failed, w)
		personas = append(personas, r.Persona)
	}
	delete(s.retries, w)
	slices.Sort(personas)
	return slices.Compact(personas)
}

// Counts are the waiting (not halted), rolling and halted workloads: a
// halted one is a failed rollout or a restart its halt holds.
func (s *Scheduler) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Counts{Rolling: len(s.rolling), Halted: len(s.failed)}
	for _, r := range s.waiting {
		if v, ok := s.halts[haltOf(r)]; ok && v == r.Cause.Version {
			c.Halted++
		} else {
			c.Waiting++
		}
	}
	return c
}

func (s *Scheduler) countIn(r Restart) {
	p := s.progress[r.Cause]
	if p == nil {
		p = &Progress{}
		s.progress[r.Cause] = p
	}
	p.Total++
}

// countOut takes r out of its cause's total: it was replaced or dropped.
func (s *Scheduler) countOut(r Restart) {
	if p := s.progress[r.Cause]; p != nil {
		p.Total--
		if p.Total <= p.Done {
			delete(s.progress, r.Cause)
		}
	}
}

func (s *Scheduler) done(r Restart) Progress {
	p := s.progress[r.Cause]
	if p == nil {
		return Progress{Done: 1, Total: 1}
	}
	p.Done++
	out := *p
	if p.Done >= p.Total {
		delete(s.progress, r.Cause)
	}
	return out
}

func class(r Restart) int {
	if r.Priority {
		return 0
	}
	return 1
}

func (s *Scheduler) enqueue(r Restart) {
	ns := r.Workload.Namespace
	q := s.queues[ns]
	if q == nil {
		q = &[2][]Workload{}
		s.queues[ns] = q
		s.namespaces = append(s.namespaces, ns)
	}
	q[class(r)] = append(q[class(r)], r.Workload)
}

func (s *Scheduler) unqueue(r Restart) {
	ns := r.Workload.Namespace
	if q := s.queues[ns]; q != nil {
		c := class(r)
		if i := slices.Index(q[c], r.Workload); i >= 0 {
			q[c] = slices.Delete(q[c], i, i+1)
		}
	}
	s.dropEmpty(ns)
}

// dropEmpty takes ns out of the ring once it has nothing waiting, keeping
// the cursor on the namespace that was next.
func (s *Scheduler) dropEmpty(ns string) {
	q := s.queues[ns]
	if q == nil || len(q[0])+len(q[1]) > 0 {
		return
	}
	delete(s.queues, ns)
	s.namespaces, s.next = fairshare.Leave(s.namespaces, s.next, ns)
}

// newer reports whether version a of a cause comes after b: by number when
// both are numbers (generations, resource versions), so that a restart still
// waiting on an older version lifts no halt; else when they differ.
func newer(a, b string) bool {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if errA == nil && errB == nil {
		return x > y
	}
	return a != b
}
