package install

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/persona-operator/persona-operator/api/v1alpha1"

	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// A tenant: a user with the built-in edit ClusterRole in its namespace.
const (
	tenantUser      = "tenant"
	tenantNamespace = "tenant-a"
)

// The identities of kube-controller-manager's garbage collector and
// namespace controller (--use-service-account-credentials). envtest runs no
// kube-controller-manager: the tests do their deletes by impersonating them,
// with the rights the API server's bootstrap roles give them.
var (
	garbageCollector    = serviceAccount("kube-system", "generic-garbage-collector")
	namespaceController = serviceAccount("kube-system", "namespace-controller")
)

type identity struct {
	user   string
	groups []string
}

func serviceAccount(ns, name string) identity {
	return identity{"system:serviceaccount:" + ns + ":" + name, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
}

func (id identity) client(t *testing.T, p *controlplane.Plane) client.Client {
	t.Helper()
	c, err := client.New(p.Impersonating(id.user, id.groups...), client.Options{Scheme: controlplane.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// aggregateRoles does what kube-controller-manager's clusterrole-aggregation
// controller does, which envtest lacks: it gives each ClusterRole with an
// aggregationRule (admin, edit, view) the rules of the ClusterRoles its
// selectors match, this install's aggregated roles among them.
func aggregateRoles(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	var roles rbacv1.ClusterRoleList
	if err := admin.List(ctx, &roles); err != nil {
		t.Fatal(err)
	}
	for i := range roles.Items {
		role := &roles.Items[i]
		if role.AggregationRule == nil {
			continue
		}
		var rules []rbacv1.PolicyRule
		for _, sel := range role.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				t.Fatal(err)
			}
			for _, other := range roles.Items {
				if other.Name != role.Name && s.Matches(labels.Set(other.Labels)) {
					rules = append(rules, other.Rules...)
				}
			}
		}
		role.Rules = rules
		if err := admin.Update(ctx, role); err != nil {
			t.Fatalf("aggregate into ClusterRole %s: %v", role.Name, err)
		}
	}
}

// bindEdit binds the built-in edit ClusterRole to user in ns.
func bindEdit(ctx context.Context, t *testing.T, admin client.Client, ns, user string) {
	t.Helper()
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edit-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := admin.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
}

func createNamespace(ctx context.Context, t *testing.T, admin client.Client, ns string) {
	t.Helper()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
}

// persona is a Persona whose prompt is text alone.
func persona(ns, name, text string) *unstructured.Unstructured {
	objs, err := controlplane.DecodeManifest(strings.NewReader(`
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata:
  name: ` + name + `
  namespace: ` + ns + `
spec:
  systemPrompt:` + fixtures.RemoveAllSections + `
    extensions:
    - id: text
      template: ` + fixtures.Quote(text) + "\n"))
	if err != nil || len(objs) != 1 {
		panic(err)
	}
	return objs[0]
}

// waitFor polls cond every 100 ms until it holds, failing the test after
// timeout with what it last said.
func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, said := cond()
		last = said
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %s", what, timeout, last)
	}
}

// finishOrphanDelete does what the garbage collector does after kubectl
// delete persona --cascade=orphan: it takes the Persona off the owners of
// each of its ConfigMaps, then the orphan finalizer off the Persona, and
// waits for the Persona to be gone.
func finishOrphanDelete(ctx context.Context, t *testing.T, admin, gc client.Client, ns, name string, configMaps ...string) {
	t.Helper()
	for _, cmName := range configMaps {
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cm corev1.ConfigMap
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: cmName}, &cm); err != nil {
				return err
			}
			cm.OwnerReferences = nil
			return gc.Update(ctx, &cm)
		}); err != nil {
			t.Fatalf("the garbage collector orphans %s: %v", cmName, err)
		}
	}
	old := persona(ns, name, "")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
			return err
		}
		controllerutil.RemoveFinalizer(old, metav1.FinalizerOrphanDependents)
		return gc.Update(ctx, old)
	}); err != nil {
		t.Fatalf("the garbage collector drops the orphan finalizer: %v", err)
	}
	waitFor(ctx, t, 10*time.Second, "the Persona is gone", func() (bool, string) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(old), persona(ns, name, ""))
		return apierrors.IsNotFound(err), errString(err)
	})
}

// waitPrompt waits until ns's persona-<name> holds text, controlled by the
// Persona name (by UID), and returns it.
func waitPrompt(ctx context.Context, t *testing.T, admin client.Client, ns, name, text string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	waitFor(ctx, t, 30*time.Second, "persona-"+name+" holds "+text, func() (bool, string) {
		p := persona(ns, name, "")
		if err := admin.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err.Error()
		}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "persona-" + name}, &cm); err != nil {
			return false, err.Error()
		}
		owner := metav1.GetControllerOf(&cm)
		return cm.Data["system-prompt.md"] == text+"\n" && owner != nil && owner.UID == p.GetUID(),
			"data " + cm.Data["system-prompt.md"] + ", controller " + ownerString(owner)
	})
	return &cm
}

func ownerString(ref *metav1.OwnerReference) string {
	if ref == nil {
		return "none"
	}
	return ref.Kind + " " + ref.Name + " " + string(ref.UID)
}

// unstructuredSet sets a nested field of u.
func unstructuredSet(u *unstructured.Unstructured, value any, path ...string) error {
	return unstructured.SetNestedField(u.Object, value, path...)
}

// updatePersona sets the text of the Persona name, as made by persona.
func updatePersona(ctx context.Context, t *testing.T, c client.Client, ns, name, text string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := persona(ns, name, "")
		if err := c.Get(ctx, client.ObjectKeyFromObject(current), current); err != nil {
			return err
		}
		exts := []any{map[string]any{"id": "text", "template": text}}
		if err := unstructured.SetNestedSlice(current.Object, exts, "spec", "systemPrompt", "extensions"); err != nil {
			return err
		}
		return c.Update(ctx, current)
	})
	if err != nil {
		t.Fatalf("update Persona %s: %v", name, err)
	}
}

// waitReady waits until the Persona's Ready reason is reason, at its generation.
func waitReady(ctx context.Context, t *testing.T, c client.Client, ns, name, reason string) {
	t.Helper()
	waitFor(ctx, t, 30*time.Second, "Persona "+name+" "+reason, func() (bool, string) {
		var p v1alpha1.Persona
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return false, err.Error()
		}
		ready := meta.FindStatusCondition(p.Status.Conditions, "Ready")
		if ready == nil {
			return false, "no Ready"
		}
		return ready.Reason == reason && ready.ObservedGeneration == p.Generation, ready.Reason + ": " + ready.Message
	})
}

// waitPromptContains waits until persona-<name>'s system prompt has each of parts.
func waitPromptContains(ctx context.Context, t *testing.T, c client.Client, ns, name string, parts ...string) {
	t.Helper()
	waitFor(ctx, t, 30*time.Second, "persona-"+name+" has "+strings.Join(parts, ", "), func() (bool, string) {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "persona-" + name}, &cm); err != nil {
			return false, err.Error()
		}
		prompt := cm.Data["system-prompt.md"]
		for _, part := range parts {
			if !strings.Contains(prompt, part) {
				return false, prompt
			}
		}
		return true, ""
	})
}
