package manifest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InvalidError is an object that cannot be read as its kind, such as a
// parent Persona whose layers hold a string: each problem by field path, as
// admission reports them on the object itself.
type InvalidError struct {
	Object *Object
	Errs   field.ErrorList
}

func (e *InvalidError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%s %s is not valid: %s", e.Object.Origin, e.Object.Ref(), strings.Join(msgs, "; "))
}
