package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/internal/promptdiff"
)

// side is one side of a diff read from manifests: the ConfigMap data of
// every persona that renders, the personas that do not, and the problems
// found, as validate finds them.
type side struct {
	what       string
	rendered   map[promptdiff.Ref]map[string]string
	unrendered map[promptdiff.Ref]bool
	problems   problems
}

// readSide reads and checks one side's manifests and renders every persona
// it can; prepare, when set, completes the set before the checks. Only a
// side that cannot be read at all is an error; its problems are printed on
// standard error and kept.
func readSide(ctx context.Context, s *Streams, src *source, ns, what string, prepare func(*manifest.Set) error) (*side, error) {
	set, err := src.read(ns, s.In)
	if err != nil {
		return nil, err
	}
	if prepare != nil {
		if err := prepare(set); err != nil {
			return nil, err
		}
	}
	c := checkSet(ctx, set)
	sd := &side{what: what, rendered: c.data(), unrendered: map[promptdiff.Ref]bool{}, problems: c.problems}
	for _, p := range set.Personas() {
		r := promptdiff.Ref{Namespace: p.Namespace, Name: p.Name}
		if _, ok := sd.rendered[r]; !ok {
			sd.unrendered[r] = true
		}
	}
	return sd, nil
}

// summarize prints the side's problems and their count on w.
func (sd *side) summarize(w io.Writer, note string) {
	if len(sd.problems) == 0 {
		return
	}
	sd.problems.write(w)
	fmt.Fprintf(w, "%s: %s%s; run '%s validate' on them\n", sd.what, plural(len(sd.problems), "problem"), note, Name)
}

// DiffResult is what kubectl persona diff -o json prints: the personas that
// differ, and the problems of each side.
type DiffResult struct {
	promptdiff.Result
	// Problems are the problems of both sides, the old side's first, each
	// ordered by file, document and item; never null.
	Problems []DiffProblem `json:"problems"`
}

// DiffProblem is a problem of one side.
type DiffProblem struct {
	// Side is old or new.
	Side string `json:"side"`
	Problem
}

func diffResult(diffs []promptdiff.Persona, oldSide, newSide *side) DiffResult {
	r := DiffResult{Result: promptdiff.Result{Personas: diffs}, Problems: []DiffProblem{}}
	for _, sd := range []struct {
		label string
		side  *side
	}{{labelOld, oldSide}, {labelNew, newSide}} {
		for _, p := range sd.side.problems.sorted() {
			r.Problems = append(r.Problems, DiffProblem{Side: sd.label, Problem: jsonProblem(p)})
		}
	}
	return r
}
