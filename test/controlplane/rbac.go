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
	return p.GrantClusterRole(filepath.Join(p.root, "config", "rbac", "role.yaml"), ManagerUser)
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
