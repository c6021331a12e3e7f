package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// grantManagerRole installs the generated ClusterRole of config/rbac and
// binds it to ManagerUser.
func (p *Plane) grantManagerRole() error {
	if err := p.GrantClusterRole(filepath.Join(p.root, "config", "rbac", "role.yaml"), ManagerUser); err != nil {
		return err
	}
	return p.grantRole(filepath.Join(p.root, "config", "rbac", "control_plane_check_role.yaml"), ManagerNamespace, ManagerUser)
}

// ManagerNamespace is the namespace the manager runs in (POD_NAMESPACE),
// where it has the Roles of config/rbac.
const ManagerNamespace = "default"

// grantRole installs the Role of the file path in namespace and binds it
// to user, leaving either as it is when it is there already.
func (p *Plane) grantRole(path, namespace, user string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict(raw, &role); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	role.Namespace = namespace
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	ctx := context.Background()
	if err := p.Client.Create(ctx, &role); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Role %s/%s: %w", namespace, role.Name, err)
	}
	if err := p.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create RoleBinding %s/%s: %w", namespace, binding.Name, err)
	}
	return nil
}

// GrantClusterRole installs the ClusterRole of the file path and binds it
// to user, leaving either as it is when it is there already.
func (p *Plane) GrantClusterRole(path, user string) error {
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
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	ctx := context.Background()
	if err := p.Client.Create(ctx, &role); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
	}
	if err := p.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return nil
}
