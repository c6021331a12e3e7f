package v1alpha1

import (
	"fmt"
	"strconv"
)

// PinnedRevisionOf is the revision the PinRevisionAnnotation of
// annotations names: set is false without the annotation, and err says why
// a value that is there is not a positive integer in decimal.
func PinnedRevisionOf(annotations map[string]string) (n int64, set bool, err error) {
	value, set := annotations[PinRevisionAnnotation]
	if !set {
		return 0, false, nil
	}
	if value == "" || value[0] < '1' || value[0] > '9' {
		return 0, true, fmt.Errorf("%q is not a positive integer", value)
	}
	n, err = strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%q is not a positive integer", value)
	}
	return n, true, nil
}
