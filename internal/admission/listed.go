package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxListedErrors bounds the errors one check builds. An object can hold
// hundreds of thousands (one per unknown key), and building each, with its
// did-you-mean hint, cost a second of CPU for 2.8 MiB of keys, which the
// API server's own admissions waited behind; past the bound they are
// counted, not built.
const MaxListedErrors = 100

// listedErrors collects up to MaxListedErrors errors and counts the rest.
type listedErrors struct {
	errs     field.ErrorList
	unlisted int
}

// add builds the error with build, or only counts it once the list is full.
func (l *listedErrors) add(build func() *field.Error) {
	if len(l.errs) >= MaxListedErrors {
		l.unlisted++
		return
	}
	l.errs = append(l.errs, build())
}

// full reports whether the list holds MaxListedErrors errors: past it,
// a check that is costly to make for an error only counted may be skipped.
func (l *listedErrors) full() bool { return len(l.errs) >= MaxListedErrors }

// addAll adds errs, built already, or only counts those past the bound.
func (l *listedErrors) addAll(errs field.ErrorList) {
	for _, err := range errs {
		l.add(func() *field.Error { return err })
	}
}

// list is the errors built, and, when some were only counted, one more at p
// that says how many.
func (l *listedErrors) list(p *field.Path) field.ErrorList {
	if l.unlisted == 0 {
		return l.errs
	}
	return append(l.errs, Unlisted(p, l.unlisted))
}

// Unlisted is the error that stands for n more errors at or under p.
func Unlisted(p *field.Path, n int) *field.Error {
	return &field.Error{Type: field.ErrorTypeForbidden, Field: p.String(), BadValue: unlistedCount(n),
		Detail: fmt.Sprintf("%d more errors, not listed", n)}
}

// unlistedCount is the BadValue of an Unlisted error (a Forbidden error's
// message leaves its value out).
type unlistedCount int

// Capped is errs with at most MaxListedErrors of them listed, and the rest,
// with those each Unlisted error among them stands for, counted in one
// Unlisted error at p.
func Capped(p *field.Path, errs field.ErrorList) field.ErrorList {
	var capped listedErrors
	for _, err := range errs {
		if n, ok := err.BadValue.(unlistedCount); ok {
			capped.unlisted += int(n)
			continue
		}
		capped.add(func() *field.Error { return shortened(err) })
	}
	return capped.list(p)
}

// maxFieldBytes bounds an error's field path in a refusal, and
// maxDetailBytes its detail: each is written twice into the answer.
const (
	maxFieldBytes  = 512
	maxDetailBytes = 2048
)

// shortened is err with its path, detail and quoted value cut to what a
// refusal shows, so that no error of a refusal is large whatever built it.
func shortened(err *field.Error) *field.Error {
	short := *err
	short.Field = cut(short.Field, maxFieldBytes)
	short.Detail = cut(short.Detail, maxDetailBytes)
	// Only a scalar is quoted, cut: a list or an object would be written
	// whole, twice, each < escaped to six bytes.
	short.BadValue = shortValue(short.BadValue)
	return &short
}

// cut is s cut to at most n bytes at a rune's start, marked when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
