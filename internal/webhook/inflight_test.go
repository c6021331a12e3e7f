package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/persona-operator/persona-operator/internal/render"
)

// review is an AdmissionReview as the API server sends it, with an object
// of about size bytes.
func review(t *testing.T, uid string, size int) []byte {
	t.Helper()
	obj, _ := json.Marshal(map[string]any{"kind": "Persona", "spec": map[string]any{"prompt": strings.Repeat("x", size)}})
	return objectReview(t, "u-"+uid, obj)
}

// objectReview is an AdmissionReview of a CREATE of obj, a JSON object of
// this API, as the API server sends it.
func objectReview(t *testing.T, uid string, obj []byte) []byte {
	t.Helper()
	var kind struct{ Kind string }
	if err := json.Unmarshal(obj, &kind); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(uid), Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: obj},
			Kind: metav1.GroupVersionKind{Group: "prompts.persona-operator.dev", Version: "v1alpha1", Kind: kind.Kind}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func TestRequestUID(t *testing.T) {
	uid, ok := requestUID(bytes.NewReader(review(t, "1", 3<<20)))
	if !ok || uid != "u-1" {
		t.Errorf("uid %q, %v; want u-1", uid, ok)
	}
	// The uid after a large value is not read: the body is limited.
	late := []byte(`{"request":{"object":{"x":"` + strings.Repeat("x", 128<<10) + `"},"uid":"late"}}`)
	if uid, ok := requestUID(bytes.NewReader(late[:64<<10])); ok {
		t.Errorf("read uid %q past the limit", uid)
	}
}

// TestInflightBound: a request that does not fit beside the ones being
// validated waits, and is denied with the reason after half its timeout;
// once they are done it is let in.
func TestInflightBound(t *testing.T) {
	limits := render.DefaultLimits
	l := newInflight(limits)
	if w := l.requestWeight(3 << 20); 2*w <= l.heavy.limit {
		t.Fatalf("two maximal requests (%d bytes each) fit in %d", w, l.heavy.limit)
	}
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	srv := httptest.NewServer(l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		if r.URL.Query().Get("block") != "" {
			<-release
		}
		_, _ = w.Write([]byte("validated"))
	})))
	defer srv.Close()
	post := func(query string, body []byte) *http.Response {
		resp, err := http.Post(srv.URL+"/?"+query, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return nil
		}
		return resp
	}

	first := review(t, "first", 3<<20)
	// 16 bytes a byte, and a parse of 64 KiB at 96 bytes a byte: more than
	// the lane, so it is let in alone, at the lane's weight.
	held := (min(16*len(first)+64<<10*96, HeavyInflightBytes) + 1<<20 - 1) >> 20
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp := post("block=1&timeout=10s", first); resp != nil {
			resp.Body.Close()
		}
	}()
	<-entered

	counted := turnedAwayCounter("validating", "NoTurnInTime")
	start := time.Now()
	resp := post("timeout=400ms", review(t, "second", 3<<20))
	waited := time.Since(start)
	var denial admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&denial); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if waited < 200*time.Millisecond {
		t.Errorf("denied after %v, before half its timeout", waited)
	}
	r := denial.Response
	if r == nil || r.Allowed || r.UID != "u-second" || r.Result == nil || r.Result.Code != http.StatusTooManyRequests ||
		!strings.Contains(r.Result.Message, fmt.Sprintf("the webhook is validating %d MiB of requests over 64 KiB already (its bound is 24 MiB); try again", held)) {
		t.Errorf("denial %+v %+v", r, r.Result)
	}
	counted(t)

	// While a heavy request waits in line, an ordinary one is let in at once.
	waiting := make(chan struct{})
	go func() {
		defer close(waiting)
		if resp := post("timeout=2s", review(t, "waiting", 3<<20)); resp != nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond)
	start = time.Now()
	resp = post("timeout=2s", review(t, "small", 2<<10))
	if resp.StatusCode != http.StatusOK || time.Since(start) > 500*time.Millisecond {
		t.Errorf("an ordinary request beside a waiting maximal one: %s after %v", resp.Status, time.Since(start))
	}
	resp.Body.Close()
	<-entered
	<-waiting

	close(release)
	<-done
	resp = post("timeout=400ms", review(t, "third", 3<<20))
	got := new(bytes.Buffer)
	_, _ = got.ReadFrom(resp.Body)
	resp.Body.Close()
	if got.String() != "validated" {
		t.Errorf("after the first was done, the next was answered %q", got)
	}
}

// deadlineRecorder is a ResponseWriter that records the deadlines set on
// its connection.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	write []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.write = append(d.write, t)
	return nil
}

func (d *deadlineRecorder) SetReadDeadline(time.Time) error { return nil }

// A client that never reads its answer holds the lane at most
// answerWriteTime from when the answer is written; past the review the
// connection keeps its server's write bound, as on any other request.
func TestAnAnswerHoldsTheLaneBrieflyAndTheServersWriteDeadlineStands(t *testing.T) {
	l := newInflight(render.DefaultLimits)
	h := l.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("validated")) }))
	srv := &http.Server{WriteTimeout: 32 * time.Second}
	body := review(t, "deadline", 1<<10)
	req := httptest.NewRequest(http.MethodPost, "/?timeout=10s", bytes.NewReader(body))
	req = req.WithContext(context.WithValue(req.Context(), http.ServerContextKey, srv))
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	before := time.Now()
	h.ServeHTTP(rec, req)
	after := time.Now()
	if rec.Code != http.StatusOK || len(rec.write) == 0 {
		t.Fatalf("answer %d, write deadlines %v; want 200 and the lane's deadline set", rec.Code, rec.write)
	}
	answering := false
	for _, d := range rec.write[:len(rec.write)-1] {
		answering = answering || !d.After(after.Add(answerWriteTime))
	}
	if !answering {
		t.Errorf("write deadlines %v: none within %v of the answer, want the lane held no longer", rec.write, answerWriteTime)
	}
	last := rec.write[len(rec.write)-1]
	if last.Before(before.Add(srv.WriteTimeout)) || last.After(after.Add(srv.WriteTimeout)) {
		t.Errorf("write deadline after the review %v, want the server's, %v after the request began", last, srv.WriteTimeout)
	}
}

// bodyGrowth is what receiving.read charges for a body of n bytes, step
// by step: twice each growth of its buffer, which doubles from firstChunk,
// before it is made. Each buffer must hold no more than was charged for it.
func bodyGrowth(t *testing.T, n int64) []int64 {
	t.Helper()
	var need []int64
	body := make([]byte, min(n, firstChunk))
	for int64(len(body)) < n {
		grown := nextGrowth(int64(cap(body)), n)
		need = append(need, 2*grown)
		before := cap(body)
		if body = growBody(body, grown); int64(cap(body)-before) != grown {
			t.Fatalf("a body of %d bytes: its buffer of %d bytes grew by %d, where %d were charged", n, before, cap(body)-before, grown)
		}
		body = body[:cap(body)]
	}
	return need
}

// TestBodiesBeingReceivedNeverWaitOnEachOther: three API servers, each
// with two heavy bodies under way at all times, their bytes arriving in
// every order, now and then one cut short. At every step some body may go
// on, or one that has arrived is let into the lane and gives its room
// back; the room never holds more than one and a half times its limit and
// one body. (Buffers grown by append, half as much again as charged, took
// several bodies beyond the room at once, each waiting for the others:
// 17.5 MiB held of a room of 8 MiB, every body waiting, until one was
// denied after 5 s.)
func TestBodiesBeingReceivedNeverWaitOnEachOther(t *testing.T) {
	type body struct {
		rcpt *receipt
		need []int64
	}
	sizes := []int64{lightRequestBytes + 1, 300 << 10, 1 << 20, 3<<20 + 300, maxRequestBytes / 2}
	largest := slices.Max(sizes)
	needs := make([][]int64, len(sizes))
	for i, n := range sizes {
		needs[i] = bodyGrowth(t, n)
	}
	for seed := range 2000 {
		rng := rand.New(rand.NewPCG(uint64(seed), 39))
		rv := newReceiving(heavyReceivingBytes)
		var reading []*body
		var arrived []*receipt // in the order the lane lets them in
		begin := func(client string) {
			size := rng.IntN(len(sizes))
			reading = append(reading, &body{rcpt: rv.begin(client, nil), need: needs[size]})
		}
		for c := range 3 {
			begin(fmt.Sprint("127.0.9.", c+1))
			begin(fmt.Sprint("127.0.9.", c+1))
		}
		for step := range 300 {
			if len(arrived) > 0 && rng.IntN(3) == 0 {
				next := arrived[0]
				arrived = arrived[1:]
				rv.finish(next)
				begin(next.client)
			}
			if len(reading) > 0 && rng.IntN(40) == 0 {
				// Cut short: its read ends, and its room goes back.
				i := rng.IntN(len(reading))
				cut := reading[i]
				reading = slices.Delete(reading, i, i+1)
				rv.ended(cut.rcpt, false)
				rv.finish(cut.rcpt)
				begin(cut.rcpt.client)
			}
			progressed := false
			for _, i := range rng.Perm(len(reading)) {
				b := reading[i]
				if !rv.tryCharge(b.rcpt, b.need[0]) {
					continue
				}
				progressed = true
				if b.need = b.need[1:]; len(b.need) == 0 {
					rv.ended(b.rcpt, true)
					arrived = append(arrived, b.rcpt)
					reading = slices.Delete(reading, i, i+1)
				}
				break
			}
			rv.mu.Lock()
			held := rv.held
			rv.mu.Unlock()
			if bound := rv.limit + rv.limit/2 + 2*largest; held > bound {
				t.Fatalf("seed %d, step %d: the bodies being received hold %d bytes, over one and a half times the room and one body, %d", seed, step, held, bound)
			}
			if !progressed && len(arrived) == 0 {
				var holding []string
				for _, b := range reading {
					holding = append(holding, fmt.Sprintf("%s holds %d KiB and waits for %d KiB", b.rcpt.client, b.rcpt.charged>>10, b.need[0]>>10))
				}
				t.Fatalf("seed %d, step %d: no body may go on and none has arrived, with %d KiB held: %s", seed, step, held>>10, strings.Join(holding, "; "))
			}
		}
	}
}
