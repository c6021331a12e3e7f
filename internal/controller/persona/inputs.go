package persona

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// inputs is a digest of what one resolve of a Persona read: which objects,
// in what order, at which versions. Two resolves with the same digest
// render the same: a render is a function of what it reads.
type inputs [sha256.Size]byte

// readLog builds the inputs of one resolve; it is not safe for concurrent use.
type readLog struct {
	h hash.Hash
	// objects are the objects read by name, and listed those read in a
	// list, by UID, for revision.json's inputs (revision_numbering.go).
	objects []v1alpha1.RevisionInput
	listed  map[types.UID]v1alpha1.RevisionInput
}

// newReadLog starts the log of a resolve of persona, the first thing it reads.
func newReadLog(persona client.Object) *readLog {
	l := &readLog{h: sha256.New()}
	l.Read(persona)
	return l
}

// Read notes that obj was read. An object that counts its spec's changes
// in metadata.generation (every kind of this API) is noted by UID,
// generation, labels and annotations, so that its status writes, which a
// render never reads, leave the inputs unchanged; any other by
// resourceVersion.
func (l *readLog) Read(obj client.Object) {
	l.objects = append(l.objects, inputOf(obj))
	l.fields(reflect.TypeOf(obj).Elem().Name(), obj.GetNamespace(), obj.GetName())
	if obj.GetGeneration() == 0 {
		l.fields(obj.GetResourceVersion())
		return
	}
	l.fields(string(obj.GetUID()), strconv.FormatInt(obj.GetGeneration(), 10))
	l.strings(obj.GetLabels())
	l.strings(obj.GetAnnotations())
}

// ReadList notes that the objects of a list were read, in the order of
// their keys: a cache lists in no fixed order.
func (l *readLog) ReadList(list client.ObjectList) error {
	var objs []client.Object
	err := meta.EachListItem(list, func(o runtime.Object) error {
		objs = append(objs, o.(client.Object))
		return nil
	})
	slices.SortFunc(objs, func(a, b client.Object) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	l.fields(strconv.Itoa(len(objs)))
	objects := l.objects
	for _, o := range objs {
		l.Read(o)
		if l.listed == nil {
			l.listed = map[types.UID]v1alpha1.RevisionInput{}
		}
		l.listed[o.GetUID()] = l.objects[len(l.objects)-1]
	}
	// A list's items are inputs only once the resolve selects them.
	l.objects = objects
	return err
}

// Missing notes that the object of obj's kind named key was not found.
func (l *readLog) Missing(obj client.Object, key client.ObjectKey) {
	l.fields(reflect.TypeOf(obj).Elem().Name(), key.Namespace, key.Name, "missing")
}

func (l *readLog) strings(m map[string]string) {
	l.fields(strconv.Itoa(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		l.fields(k, m[k])
	}
}

// fields writes each field after its length, so that different fields
// cannot run together into the same bytes.
func (l *readLog) fields(fields ...string) {
	var n [binary.MaxVarintLen64]byte
	for _, f := range fields {
		_, _ = l.h.Write(binary.AppendUvarint(n[:0], uint64(len(f))))
		_, _ = io.WriteString(l.h, f)
	}
}

// inputOf is obj as an input of revision.json: by generation when it
// counts its spec's changes so, by resourceVersion otherwise.
func inputOf(obj client.Object) v1alpha1.RevisionInput {
	in := v1alpha1.RevisionInput{Kind: reflect.TypeOf(obj).Elem().Name(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if in.Generation = obj.GetGeneration(); in.Generation == 0 {
		in.ResourceVersion = obj.GetResourceVersion()
	}
	return in
}

// revisionInputs are the objects read by name and, of the listed ones,
// those whose UID is in selected (the ClusterPromptLayers the Persona's
// render applied), sorted.
func (l *readLog) revisionInputs(selected []types.UID) []v1alpha1.RevisionInput {
	in := slices.Clone(l.objects)
	for _, uid := range selected {
		if o, ok := l.listed[uid]; ok {
			in = append(in, o)
		}
	}
	slices.SortFunc(in, compareInputs)
	return slices.CompactFunc(in, func(a, b v1alpha1.RevisionInput) bool { return a == b })
}

func compareInputs(a, b v1alpha1.RevisionInput) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Generation, b.Generation), cmp.Compare(a.ResourceVersion, b.ResourceVersion))
}

func (l *readLog) sum() inputs {
	var out inputs
	l.h.Sum(out[:0])
	return out
}
