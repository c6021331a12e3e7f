package release

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// At weight 10, 1,000 pods give between 62 and 138 canaries (four standard
// deviations of a binomial of 1,000 and 0.1, 9.5 pods, about the mean of
// 100), over many rounds of random uids; the same uid always gets the same
// answer; 0 and 100 are none and all.
func TestIsCanaryShare(t *testing.T) {
	for round := range 50 {
		canaries := 0
		for range 1000 {
			uid := uuid.NewUUID()
			if IsCanary(uid, 10) {
				canaries++
				if !IsCanary(uid, 10) {
					t.Fatal("the same uid got another answer")
				}
			}
		}
		if canaries < 62 || canaries > 138 {
			t.Errorf("round %d: %d canaries of 1,000 at weight 10", round, canaries)
		}
	}
	for i := range 100 {
		uid := types.UID(fmt.Sprint("u", i))
		if IsCanary(uid, 0) || !IsCanary(uid, 100) {
			t.Fatal("weight 0 gave a canary, or 100 a stable pod")
		}
	}
}
