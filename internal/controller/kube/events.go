package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/persona-operator/persona-operator/internal/status"
)

// CuttingRecorder records Events through its recorder, each note cut to
// status.MaxEventNote: the API server refuses a longer one, and a failure's
// message, which a note repeats, can be of any length.
type CuttingRecorder struct{ events.EventRecorder }

func (r CuttingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", status.Cut(fmt.Sprintf(note, args...), status.MaxEventNote))
}
