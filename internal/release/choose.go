package release

import (
	"crypto/sha256"
	"encoding/binary"

	"k8s.io/apimachinery/pkg/types"
)

// IsCanary reports whether the pod whose creation the AdmissionReview uid
// admits gets the canary revision, at weight percent: the same uid always
// gets the same answer, and uids, random as the API server makes them,
// fall below weight a weight-percent share of the time. The choice is
// made in ten-thousandths, so that every whole percent is exact.
func IsCanary(uid types.UID, weight int32) bool {
	switch {
	case weight <= 0:
		return false
	case weight >= 100:
		return true
	}
	sum := sha256.Sum256([]byte(uid))
	return binary.BigEndian.Uint64(sum[:8])%10000 < uint64(weight)*100
}
