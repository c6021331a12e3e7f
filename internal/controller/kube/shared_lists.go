package kube

import (
	"encoding/binary"
	"sync"
	"unsafe"
	"weak"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// Personas that inherit the same parent and list the same layers have the
// same status.sections, but for the size of their own piece, and the same
// status.dependencies: thousands of equal lists. The cache's transform and
// the deferred statuses make equal lists share one array, held weakly by
// the table that finds it, so that a list no object holds any more is
// collected as any other.

// sharedList is a table of the lists of E that objects share.
type sharedList[E comparable] struct {
	// appendKey appends e's encoding, which no other E shares, to b.
	appendKey func(b []byte, e E) []byte
	// canonical is e as the shared array holds it, its strings shared.
	canonical func(e E) E

	mu sync.Mutex
	// byKey finds a shared array's first element by the encoding of its
	// elements; its length is the number of elements the key encodes.
	byKey map[string]weak.Pointer[E]
	// swept is len(byKey) after the last sweep of collected arrays.
	swept int
}

// share returns the array equal lists share, list's elements in an array
// the table owns when none is held. An empty list is returned as it is.
// The list returned is shared: nobody may change its elements.
func (t *sharedList[E]) share(list []E) []E {
	if len(list) == 0 {
		return list
	}
	var buf [512]byte
	key := buf[:0]
	for _, e := range list {
		key = t.appendKey(key, e)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if first := t.byKey[string(key)].Value(); first != nil {
		// Equal keys encode lists of the same length.
		return unsafe.Slice(first, len(list))
	}
	shared := make([]E, len(list))
	for i, e := range list {
		shared[i] = t.canonical(e)
	}
	if t.byKey == nil {
		t.byKey = map[string]weak.Pointer[E]{}
	}
	t.byKey[string(key)] = weak.Make(&shared[0])
	t.sweepLocked()
	return shared
}

// sweepLocked drops the keys of collected arrays once the table has grown
// to twice its size after the last sweep: the sweeps cost O(1) a share.
func (t *sharedList[E]) sweepLocked() {
	if len(t.byKey) < 2*t.swept+64 {
		return
	}
	for k, w := range t.byKey {
		if w.Value() == nil {
			delete(t.byKey, k)
		}
	}
	t.swept = len(t.byKey)
}

func appendKeyString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var (
	sharedSections = &sharedList[v1alpha1.RenderedSection]{
		appendKey: func(b []byte, s v1alpha1.RenderedSection) []byte {
			return binary.AppendVarint(appendKeyString(appendKeyString(b, s.Name), s.Origin), s.Bytes)
		},
		canonical: func(s v1alpha1.RenderedSection) v1alpha1.RenderedSection {
			s.Name, s.Origin = Intern(s.Name), Intern(s.Origin)
			return s
		},
	}
	sharedDependencies = &sharedList[v1alpha1.Dependency]{
		appendKey: func(b []byte, d v1alpha1.Dependency) []byte {
			return appendKeyString(appendKeyString(b, d.Kind), d.Name)
		},
		canonical: func(d v1alpha1.Dependency) v1alpha1.Dependency {
			d.Kind, d.Name = Intern(d.Kind), Intern(d.Name)
			return d
		},
	}
)

// ShareSections returns the array equal lists of sections share: see
// sharedList.share.
func ShareSections(sections []v1alpha1.RenderedSection) []v1alpha1.RenderedSection {
	return sharedSections.share(sections)
}

// ShareDependencies returns the array equal lists of dependencies share:
// see sharedList.share.
func ShareDependencies(deps []v1alpha1.Dependency) []v1alpha1.Dependency {
	return sharedDependencies.share(deps)
}
