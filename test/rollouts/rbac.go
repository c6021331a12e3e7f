package rollouts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// grantRole installs Argo Rollouts' ClusterRole of dir/clusterrole.yaml and
// binds it to ControllerUser, so that a test proves the controller needs no
// more than Argo's install gives it.
func grantRole(plane *controlplane.Plane, dir string) error {
	path := filepath.Join(dir, "clusterrole.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(raw, &role); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: ControllerUser}},
	}
	ctx := context.Background()
	if err := plane.Client.Create(ctx, &role); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
	}
	if err := plane.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return nil
}
