package layers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/status"
)

// reportValidity sets the status of a platform team's cluster-scoped
// object (a ClusterPromptLayer, the PromptPlatform) from the admission
// checks run on it as stored, which may have been without them (the webhook
// down or bypassed): Ready with readyMessage, or stalled at once with the
// problem, since only an edit of the object can fix it.
func reportValidity(obj client.Object, observedGeneration *int64, conditions *[]metav1.Condition,
	validate func(map[string]any) field.ErrorList, readyMessage string) {
	*observedGeneration = obj.GetGeneration()
	if problem := checkStored(obj, validate); problem != nil {
		status.MarkFailed(conditions, obj.GetGeneration(),
			status.Failure{Reason: v1alpha1.TemplateInvalidReason, Message: problem.Error()}, time.Now(), 0)
		return
	}
	status.MarkReady(conditions, obj.GetGeneration(), v1alpha1.ValidReason, readyMessage)
}

// checkStored runs validate on obj as admission sees it.
func checkStored(obj client.Object, validate func(map[string]any) field.ErrorList) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	return validate(u).ToAggregate()
}
