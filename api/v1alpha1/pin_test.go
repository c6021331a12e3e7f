package v1alpha1

import "testing"

func TestPinnedRevisionOf(t *testing.T) {
	for value, want := range map[string]int64{"1": 1, "42": 42, "9223372036854775807": 9223372036854775807} {
		n, set, err := PinnedRevisionOf(map[string]string{PinRevisionAnnotation: value})
		if n != want || !set || err != nil {
			t.Errorf("%q: got %d, %v, %v; want %d", value, n, set, err, want)
		}
	}
	for _, value := range []string{"", "0", "-1", "+1", "01", "1.0", " 1", "two", "9223372036854775808"} {
		if _, set, err := PinnedRevisionOf(map[string]string{PinRevisionAnnotation: value}); !set || err == nil {
			t.Errorf("%q: got set %v, error %v; want a refusal", value, set, err)
		}
	}
	if _, set, err := PinnedRevisionOf(map[string]string{"other": "1"}); set || err != nil {
		t.Errorf("no annotation: got set %v, error %v", set, err)
	}
}
