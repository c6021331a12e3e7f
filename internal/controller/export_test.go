package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// For the specs of package controller_test, which run against the suite's
// API server: the status writes of the Persona controller and of the
// restarts, to race them on purpose.
var (
	PatchPersonaStatus = patchPersonaStatus
	PatchStatus        = func(ctx context.Context, c client.Client, p *v1alpha1.Persona, before *v1alpha1.PersonaStatus, err *error) {
		patchStatus(ctx, c, p, before, &p.Status, err)
	}
)

// SetHaltedCondition is the restarts' write of RolloutHalted on a Persona.
func SetHaltedCondition(ctx context.Context, c client.Client, key types.NamespacedName, status metav1.ConditionStatus, reason, message string) error {
	return (&workloadRestarter{client: c}).setHaltedCondition(ctx, key, status, reason, message)
}
