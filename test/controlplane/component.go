package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ShippedManagerUser is the manager's username in the shipped install: its
// ServiceAccount, which config/components' policies name.
const ShippedManagerUser = "system:serviceaccount:persona-operator-system:persona-operator-controller-manager"

// InstallComponent installs the resources of a kustomize component of
// config/components (dir) for a manager that runs as user: its bindings
// bind user instead of the shipped ServiceAccount, and its policies match
// user's requests instead. Objects already there are left as they are.
// Its patches of the manager are the test's to pass as flags.
func (p *Plane) InstallComponent(ctx context.Context, dir, user string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return err
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &kustomization); err != nil {
		return fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	for _, resource := range kustomization.Resources {
		file := filepath.Join(dir, resource)
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		switch obj.GetKind() {
		case "ClusterRoleBinding", "RoleBinding":
			obj.Object["subjects"] = []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}}
		case "ValidatingAdmissionPolicy":
			conditions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "matchConditions")
			for _, c := range conditions {
				condition := c.(map[string]any)
				expression, _ := condition["expression"].(string)
				if !strings.Contains(expression, ShippedManagerUser) {
					return fmt.Errorf("%s: the match condition %q does not name %s", file, expression, ShippedManagerUser)
				}
				condition["expression"] = strings.ReplaceAll(expression, ShippedManagerUser, user)
			}
			if err := unstructured.SetNestedSlice(obj.Object, conditions, "spec", "matchConditions"); err != nil {
				return err
			}
		}
		if ns := obj.GetNamespace(); ns != "" {
			namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if err := p.Client.Create(ctx, namespace); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create Namespace %s: %w", ns, err)
			}
		}
		if err := p.Client.Create(ctx, &obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: create %s %s: %w", file, obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}
