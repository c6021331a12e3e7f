package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	var role rbacv1.Role
	if err := readStrict(path, &role); err != nil {
		return err
	}
	role.Namespace = namespace
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	return p.createIfAbsent(&role, binding)
}

// GrantClusterRole installs the ClusterRole of the file path and binds it
// to user, leaving either as it is when it is there already.
func (p *Plane) GrantClusterRole(path, user string) error {
	var role rbacv1.ClusterRole
	if err := readStrict(path, &role); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	return p.createIfAbsent(&role, binding)
}

// readStrict reads the YAML file at path into obj, refusing unknown fields.
func readStrict(path string, obj any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// createIfAbsent creates each of objs, leaving one that is there already
// as it is.
func (p *Plane) createIfAbsent(objs ...client.Object) error {
	for _, o := range objs {
		if err := p.Client.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}
