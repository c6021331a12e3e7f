package delivery

import "testing"

func TestSnapshotName(t *testing.T) {
	if got := SnapshotName("reviewer", 12); got != "persona-reviewer.r12" {
		t.Errorf("SnapshotName(reviewer, 12) = %q", got)
	}
}

func TestSnapshotOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		persona string
		n       int64
		ok      bool
	}{
		{"persona-reviewer.r1", "reviewer", 1, true},
		{"persona-a-b.r20", "a-b", 20, true},
		{"persona-reviewer", "", 0, false},    // the live ConfigMap
		{"persona-reviewer.r0", "", 0, false}, // numbers start at 1
		{"persona-reviewer.r01", "", 0, false},
		{"persona-reviewer.r-1", "", 0, false},
		{"persona-reviewer.rx", "", 0, false},
		{"persona-.r1", "", 0, false},
		{"persona-a.b.r1", "", 0, false}, // a Persona's name has no dot
		{"other-reviewer.r1", "", 0, false},
	} {
		persona, n, ok := SnapshotOf(tc.name)
		if persona != tc.persona || n != tc.n || ok != tc.ok {
			t.Errorf("SnapshotOf(%q) = %q, %d, %v; want %q, %d, %v", tc.name, persona, n, ok, tc.persona, tc.n, tc.ok)
		}
	}
}

func TestRevision(t *testing.T) {
	for v, want := range map[string]int64{"": 0, "3": 3, "x": 0, "-2": 0} {
		if got := Revision(map[string]string{RevisionAnnotation: v}); got != want {
			t.Errorf("Revision(%q) = %d, want %d", v, got, want)
		}
	}
}
