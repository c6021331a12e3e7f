package cli

import (
	"errors"
	"strings"

	sigsjson "sigs.k8s.io/json"

	"github.com/persona-operator/persona-operator/internal/admission"
)

// checkDocument checks one decoded JSON document (a turn context, a bundle)
// against the type of out, strictly: every unknown key, with a did-you-mean,
// and every value of the wrong type, each by its field, in admission's words
// rather than Go's. out is only used for its type.
func checkDocument(j []byte, out any) error {
	var v any
	strict, err := sigsjson.UnmarshalStrict(j, &v, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return errors.New(admission.DecodeErrorDetail(err))
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			// "json: duplicate field "x"" is the decoder's own wording.
			msgs[i] = strings.TrimPrefix(e.Error(), "json: ")
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	if errs := admission.Decode(nil, v, out, true); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Field + ": " + e.ErrorBody()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}
