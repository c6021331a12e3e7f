package delivery

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// RevisionAnnotation on a Persona's live ConfigMap is the number of the
// revision it delivers; RevisionLabel on a snapshot the number of the
// revision it keeps (personas.md#revisions).
const (
	RevisionAnnotation = "prompts.persona-operator.dev/revision"
	RevisionLabel      = "prompts.persona-operator.dev/revision"
)

// SnapshotBytesAnnotation on a snapshot is the size of its data, keys and
// values, which the byte cap adds up from the metadata alone.
const SnapshotBytesAnnotation = "prompts.persona-operator.dev/snapshot-bytes"

// Record is revision.json, the provenance of a revision, which the live
// ConfigMap and each snapshot hold (personas.md#revisions).
type Record struct {
	Persona     string                 `json:"persona"`
	Namespace   string                 `json:"namespace"`
	Revision    int64                  `json:"revision"`
	ContentHash string                 `json:"contentHash"`
	RenderedAt  metav1.Time            `json:"renderedAt"`
	Cause       v1alpha1.RevisionInput `json:"cause"`
	// Base is the revision whose inputs were re-rendered with the current
	// guardrails for a pin (personas.md#pinning); 0 for a render of the latest inputs.
	Base            int64                    `json:"base,omitempty"`
	Inputs          []v1alpha1.RevisionInput `json:"inputs"`
	OperatorVersion string                   `json:"operatorVersion"`
}

// Entry is the status.history entry of the revision.
func (rec *Record) Entry() v1alpha1.RevisionHistoryEntry {
	return v1alpha1.RevisionHistoryEntry{Revision: rec.Revision, ContentHash: rec.ContentHash, Time: rec.RenderedAt, Cause: rec.Cause}
}

// snapshotInfix separates a snapshot's revision from its Persona's
// ConfigMap name: a Persona's name has no dot, so no live ConfigMap has a
// snapshot's name.
const snapshotInfix = ".r"

// SnapshotName is the name of the snapshot of revision n of the Persona
// named persona: persona-<name>.r<n>.
func SnapshotName(persona string, n int64) string {
	return ConfigMapName(persona) + snapshotInfix + strconv.FormatInt(n, 10)
}

// SnapshotOf is the Persona and revision of a snapshot's name; ok is false
// for any other name.
func SnapshotOf(name string) (persona string, n int64, ok bool) {
	rest, found := strings.CutPrefix(name, ConfigMapPrefix)
	if !found {
		return "", 0, false
	}
	persona, number, found := strings.Cut(rest, snapshotInfix)
	if !found || persona == "" || strings.Contains(persona, ".") {
		return "", 0, false
	}
	n, err := strconv.ParseInt(number, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != number {
		return "", 0, false
	}
	return persona, n, true
}

// SnapshotLabels are the labels of a snapshot of revision n of the Persona
// named persona. It is no template source: templateFrom reads the live
// ConfigMap.
func SnapshotLabels(persona string, n int64) map[string]string {
	return map[string]string{
		ManagedByLabel: ManagedBy,
		PersonaLabel:   persona,
		RevisionLabel:  strconv.FormatInt(n, 10),
	}
}

// LabelledSnapshot is the Persona and revision of a snapshot by its name,
// when its labels are the SnapshotLabels of that name too. A ConfigMap of
// a snapshot's name without them is not the operator's snapshot, whoever
// its owners are: the ConfigMap policy refuses its label, not its name.
func LabelledSnapshot(obj metav1.Object) (persona string, n int64, ok bool) {
	persona, n, ok = SnapshotOf(obj.GetName())
	if !ok {
		return "", 0, false
	}
	l := obj.GetLabels()
	if l[ManagedByLabel] != ManagedBy || l[PersonaLabel] != persona || l[RevisionLabel] != strconv.FormatInt(n, 10) {
		return "", 0, false
	}
	return persona, n, true
}

// Revision is the revision number a ConfigMap's RevisionAnnotation holds;
// 0 when it holds none.
func Revision(annotations map[string]string) int64 {
	n, err := strconv.ParseInt(annotations[RevisionAnnotation], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
