package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podReview is a pod create's AdmissionReview as the API server sends it,
// of a labelled pod with the containers containers and an annotation of
// about annotation bytes.
func podReview(uid, containers string, annotation int) []byte {
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"` + uid + `",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"operation":"CREATE","namespace":"team-a","userInfo":{"username":"tenant"},` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"agent","namespace":"team-a","labels":{"prompts.persona-operator.dev/persona":"reviewer"},` +
		`"annotations":{"note":"` + strings.Repeat("x", annotation) + `"}},"spec":{"containers":[` + containers + `]}}}}`)
}

const agentContainer = `{"name":"agent","image":"busybox"}`

// blocking is a cache whose reads wait until released, telling when they start.
type blocking struct {
	entered chan string
	release chan struct{}
}

func (b blocking) Get(ctx context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	b.entered <- key.Name
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return errNotSynced
}

func (b blocking) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errNotSynced
}

func postReview(t *testing.T, url string, body []byte) (*http.Response, admissionv1.AdmissionReview) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var review admissionv1.AdmissionReview
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &review); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	} else {
		resp.Status += ": " + string(raw)
	}
	return resp, review
}

// TestInjectionRefusesOversizedReviewsUnread: a pod review longer than a
// pod create's can be is refused from its length, before its body arrives.
func TestInjectionRefusesOversizedReviewsUnread(t *testing.T) {
	srv := httptest.NewServer((&Injector{Personas: failing{}, ConfigMaps: failing{}}).Handler())
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", InjectPath, 6<<20)
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer within 1 s to a 6 MiB review not sent: %v", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 6 MiB pod review: %s; want 413", resp.Status)
	}
}

// TestInjectionRefusesDenseReviewsUndecoded: a short review of many values
// that decode to large structs (empty containers) is refused before it is
// decoded, and an ordinary one of the same kind is injected.
func TestInjectionRefusesDenseReviewsUndecoded(t *testing.T) {
	srv := httptest.NewServer((&Injector{Personas: failing{}, ConfigMaps: failing{}}).Handler())
	defer srv.Close()
	dense := podReview("dense", strings.TrimSuffix(strings.Repeat("{},", 30000), ","), 0)
	// 30,000 containers of two tokens at least, 2 KiB each: 117 MiB, over
	// the bound; it is cut short once the tokens arrived are over it.
	most := (HeavyPodInflightBytes - podBytesWeight*int64(len(dense))) / podTokenWeight
	if 60000 <= most || len(dense) > 96<<10 {
		t.Fatalf("the dense review (%d bytes) fits the bound", len(dense))
	}
	resp, _ := postReview(t, srv.URL+InjectPath, dense)
	var tokens, read int64
	if _, err := fmt.Sscanf(resp.Status[strings.Index(resp.Status, " has ")+1:], "has %d JSON tokens in its first %d bytes", &tokens, &read); resp.StatusCode != http.StatusRequestEntityTooLarge || err != nil ||
		tokens <= most || read >= int64(len(dense)) {
		t.Errorf("a review of 30,000 empty containers: %s; want 413 naming more tokens than the %d that fit, before all of its %d bytes arrived", resp.Status, most, len(dense))
	}
	resp, review := postReview(t, srv.URL+InjectPath, podReview("ordinary", agentContainer, 100))
	if resp.StatusCode != http.StatusOK || review.Response == nil || !review.Response.Allowed || len(review.Response.Patch) == 0 {
		t.Errorf("an ordinary pod review: %s %+v", resp.Status, review.Response)
	}
}

// TestInjectionReviewsWaitForTheLane: two large pod reviews do not fit
// the bound together: the second waits while the first is injected, and
// is denied with the reason after half its timeout.
func TestInjectionReviewsWaitForTheLane(t *testing.T) {
	caches := blocking{entered: make(chan string, 2), release: make(chan struct{})}
	srv := httptest.NewServer((&Injector{Personas: caches, ConfigMaps: caches}).Handler())
	defer srv.Close()
	large := func(uid string) []byte { return podReview(uid, agentContainer, 1<<20) }
	if w := int64(podBytesWeight * len(large("first"))); 2*w <= HeavyPodInflightBytes || w > HeavyPodInflightBytes {
		t.Fatalf("a review of %d bytes weighs %d: two fit, or none", len(large("first")), w)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, review := postReview(t, srv.URL+InjectPath+"?timeout=10s", large("first")); review.Response == nil || !review.Response.Allowed {
			t.Errorf("the first: %s %+v", resp.Status, review.Response)
		}
	}()
	<-caches.entered
	// The first holds 24 bytes a byte and 2,048 a JSON token of its body.
	first := large("first")
	tokens := jsonTokens(first)
	held := (24*len(first) + 2048*int(tokens) + 1<<20 - 1) >> 20

	start := time.Now()
	resp, review := postReview(t, srv.URL+InjectPath+"?timeout=400ms", large("second"))
	r := review.Response
	if r == nil || r.Allowed || r.UID != "second" || r.Result == nil || r.Result.Code != http.StatusTooManyRequests ||
		!strings.Contains(r.Result.Message, fmt.Sprintf("the webhook is injecting %d MiB of pod reviews over 64 KiB already (its bound is 48 MiB)", held)) {
		t.Errorf("the second beside the first: %s %+v", resp.Status, r)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Errorf("denied after %v, before half its timeout", waited)
	}
	select {
	case <-caches.entered:
		t.Error("the second was injected beside the first")
	default:
	}
	close(caches.release)
	<-done
}
