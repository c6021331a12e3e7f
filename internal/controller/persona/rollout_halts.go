package persona

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// RolloutHalts are the RolloutHalted conditions the restarts decide
// (restarts.Halts), which the Persona controller writes with the rest of each Persona's status. A
// merge patch replaces the conditions whole, so a second writer of them
// would have one drop or revert the other's from a stale copy: with one
// writer, nothing is lost and no patch needs a lock. The restarts and the
// Persona controller run in the same leader.
type RolloutHalts struct {
	mu         sync.Mutex
	conditions map[types.NamespacedName]metav1.Condition
	// events bring a Persona whose condition was decided to the Persona
	// controller.
	events chan event.GenericEvent
}

// NewRolloutHalts holds no condition yet.
func NewRolloutHalts() *RolloutHalts {
	return &RolloutHalts{conditions: map[types.NamespacedName]metav1.Condition{}, events: make(chan event.GenericEvent, 1024)}
}

// Set decides the RolloutHalted condition of the Persona key, and has the
// Persona controller write it.
func (h *RolloutHalts) Set(key types.NamespacedName, status metav1.ConditionStatus, reason, message string) {
	c := metav1.Condition{Type: v1alpha1.RolloutHaltedCondition, Status: status, Reason: reason, Message: message}
	h.mu.Lock()
	prev, ok := h.conditions[key]
	h.conditions[key] = c
	h.mu.Unlock()
	if ok && prev.Status == c.Status && prev.Reason == c.Reason && prev.Message == c.Message {
		return
	}
	ev := event.GenericEvent{Object: &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
	select {
	case h.events <- ev:
	default:
		go func() { h.events <- ev }() // never block the restarts on a busy controller
	}
}

// apply sets p's RolloutHalted condition as the restarts decided it; a
// Persona they decided nothing for keeps what it has. Nil (restarts off)
// changes nothing.
func (h *RolloutHalts) apply(p *v1alpha1.Persona) {
	if h == nil {
		return
	}
	h.mu.Lock()
	c, ok := h.conditions[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
	h.mu.Unlock()
	if !ok {
		return
	}
	c.ObservedGeneration = p.Generation
	meta.SetStatusCondition(&p.Status.Conditions, c)
}

// forgetPersona implements personaStore.
func (h *RolloutHalts) forgetPersona(key types.NamespacedName) {
	h.mu.Lock()
	delete(h.conditions, key)
	h.mu.Unlock()
}
