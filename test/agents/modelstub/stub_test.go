package modelstub

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStartOnRecordsWhenEachRequestArrived: a stub on an address of the
// caller's serves there, and records each request with the time it arrived.
func TestStartOnRecordsWhenEachRequestArrived(t *testing.T) {
	s, err := StartOn("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s, want one on 127.0.0.1", s.URL)
	}
	before := time.Now()
	resp, err := http.Post(s.URL+"/v1/responses", "application/json", strings.NewReader(`{"model": "m"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	after := time.Now()
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded, want 1", len(reqs))
	}
	if at := reqs[0].At; at.Before(before) || at.After(after) {
		t.Errorf("the request is recorded at %s, not between its send %s and its answer %s", at, before, after)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d, want 200", resp.StatusCode)
	}
}
