package install

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// The policy's name in the install, and that of its parameter ConfigMap.
const configMapWriters = "persona-operator-configmap-writers"

// Only the operator writes its ConfigMaps: dist/install.yaml's
// ValidatingAdmissionPolicy, on a real API server, refuses a tenant (the
// aggregated edit role in its namespace) every change to persona-<name> and
// every forgery of one, and lets the manager, system:masters, an exempt
// group, the garbage collector and the namespace controller do their work:
// deleting a Persona, a namespace and the CRDs still works, and so does
// kubectl delete persona --cascade=orphan then making the Persona again.
func TestConfigMapPolicy(t *testing.T) {
	p, log := installWithTenant(t)
	ctx := t.Context()
	admin := p.Client
	tenant := identity{tenantUser, []string{"system:authenticated"}}.client(t, p)
	gc := garbageCollector.client(t, p)
	ns := tenantNamespace
	key := client.ObjectKey{Namespace: ns, Name: "persona-p"}

	// The tenant writes Personas, through the aggregated edit role.
	if err := tenant.Create(ctx, persona(ns, "p", "First")); err != nil {
		t.Fatal(err)
	}
	waitPrompt(ctx, t, admin, ns, "p", "First")

	// editKey changes the ConfigMap key as c, and reports the result.
	editKey := func(c client.Client, key client.ObjectKey, change func(*corev1.ConfigMap)) error {
		var cm corev1.ConfigMap
		if err := admin.Get(ctx, key, &cm); err != nil {
			return err
		}
		change(&cm)
		return c.Update(ctx, &cm)
	}
	edit := func(c client.Client, change func(*corev1.ConfigMap)) error { return editKey(c, key, change) }
	// The API server loads a new policy within a moment.
	waitFor(ctx, t, 10*time.Second, "the policy refuses the tenant", func() (bool, string) {
		err := edit(tenant, func(cm *corev1.ConfigMap) { cm.Data["system-prompt.md"] = "forged\n" })
		return refusedByPolicy(err), errString(err)
	})

	t.Run("a tenant cannot change, orphan or forge the operator's ConfigMaps", func(t *testing.T) {
		plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}, Data: map[string]string{"k": "v"}}
		for _, c := range []struct {
			what string
			do   func() error
		}{
			{"update its data", func() error {
				return edit(tenant, func(cm *corev1.ConfigMap) { cm.Data["system-prompt.md"] = "forged\n" })
			}},
			{"take its managed-by label off", func() error {
				return edit(tenant, func(cm *corev1.ConfigMap) { delete(cm.Labels, "app.kubernetes.io/managed-by") })
			}},
			{"take its owner reference off", func() error {
				return edit(tenant, func(cm *corev1.ConfigMap) { cm.OwnerReferences = nil })
			}},
			{"delete it", func() error {
				return tenant.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "persona-p"}})
			}},
			{"create a labelled one", func() error {
				return tenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged",
					Labels: map[string]string{"app.kubernetes.io/managed-by": "persona-operator"}}, Data: map[string]string{"system-prompt.md": "forged\n"}})
			}},
			{"create an unlabelled one its Persona controls, of any name", func() error {
				return tenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged-p.r99",
					OwnerReferences: []metav1.OwnerReference{personaController(ctx, t, admin, ns, "p")}}, Data: map[string]string{"system-prompt.md": "forged\n"}})
			}},
			{"make its Persona the controller of an unlabelled one of its own", func() error {
				squat := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "squat-p.r98"}, Data: map[string]string{"system-prompt.md": "forged\n"}}
				if err := tenant.Create(ctx, squat); err != nil { // unowned, it is any ConfigMap
					return err
				}
				defer func() { _ = admin.Delete(ctx, squat) }()
				squat.OwnerReferences = []metav1.OwnerReference{personaController(ctx, t, admin, ns, "p")}
				return tenant.Update(ctx, squat)
			}},
			{"label one of its own", func() error {
				if err := tenant.Create(ctx, plain); err != nil { // any other ConfigMap is its to write
					return err
				}
				plain.Labels = map[string]string{"app.kubernetes.io/managed-by": "persona-operator"}
				return tenant.Update(ctx, plain)
			}},
		} {
			if err := c.do(); !refusedByPolicy(err) {
				t.Errorf("the tenant may %s: %v", c.what, err)
			}
		}
		if err := tenant.Delete(ctx, plain); err != nil {
			t.Errorf("delete an unlabelled ConfigMap of its own: %v", err)
		}
		// A Persona as a mere owner is no controller: that ConfigMap is any other.
		owned := personaController(ctx, t, admin, ns, "p")
		owned.Controller = nil
		dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owned-by-p", OwnerReferences: []metav1.OwnerReference{owned}}}
		if err := tenant.Create(ctx, dependent); err != nil {
			t.Errorf("create a ConfigMap a Persona owns without controlling it: %v", err)
		} else if err := tenant.Delete(ctx, dependent); err != nil {
			t.Errorf("delete a ConfigMap a Persona owns without controlling it: %v", err)
		}
		waitPrompt(ctx, t, admin, ns, "p", "First")
	})

	t.Run("the manager renders an edit, system:masters and an exempt group may write", func(t *testing.T) {
		updated, current := persona(ns, "p", "Second"), persona(ns, "p", "")
		if err := tenant.Get(ctx, client.ObjectKeyFromObject(current), current); err != nil {
			t.Fatal(err)
		}
		updated.SetResourceVersion(current.GetResourceVersion())
		if err := tenant.Update(ctx, updated); err != nil {
			t.Fatal(err)
		}
		waitPrompt(ctx, t, admin, ns, "p", "Second")

		if err := edit(admin, func(cm *corev1.ConfigMap) { cm.Data["system-prompt.md"] = "by an administrator\n" }); err != nil {
			t.Errorf("system:masters: %v", err)
		}
		waitPrompt(ctx, t, admin, ns, "p", "Second") // and the manager undoes the edit

		var params corev1.ConfigMap
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: configMapWriters}, &params); err != nil {
			t.Fatal(err)
		}
		params.Data["groups"] += "break-glass\n"
		if err := admin.Update(ctx, &params); err != nil {
			t.Fatal(err)
		}
		bindEdit(ctx, t, admin, ns, "oncall")
		oncall := identity{"oncall", []string{"break-glass", "system:authenticated"}}.client(t, p)
		waitFor(ctx, t, 10*time.Second, "the exempt group may write", func() (bool, string) {
			err := edit(oncall, func(cm *corev1.ConfigMap) { cm.Data["system-prompt.md"] = "break glass\n" })
			return err == nil, errString(err)
		})
		waitPrompt(ctx, t, admin, ns, "p", "Second")
	})

	t.Run("the garbage collector deletes a deleted Persona's ConfigMap", func(t *testing.T) {
		// While the Persona exists the manager makes the ConfigMap again.
		if err := gc.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "persona-p"}}); err != nil {
			t.Fatalf("the garbage collector's delete: %v", err)
		}
		waitPrompt(ctx, t, admin, ns, "p", "Second")
		if err := tenant.Delete(ctx, persona(ns, "p", "")); err != nil {
			t.Fatal(err)
		}
		if err := gc.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "persona-p"}}); err != nil {
			t.Errorf("the garbage collector's delete after the Persona's: %v", err)
		}
	})

	t.Run("kubectl delete --cascade=orphan, then the Persona again", func(t *testing.T) {
		if err := tenant.Create(ctx, persona(ns, "o", "Before")); err != nil {
			t.Fatal(err)
		}
		waitPrompt(ctx, t, admin, ns, "o", "Before")
		if err := tenant.Delete(ctx, persona(ns, "o", ""), client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
			t.Fatal(err)
		}
		finishOrphanDelete(ctx, t, admin, gc, ns, "o", "persona-o")
		okey := client.ObjectKey{Namespace: ns, Name: "persona-o"}
		var cm corev1.ConfigMap
		// An orphan is no Persona's, but its name is the operator's: the
		// tenant may not change it.
		if err := admin.Get(ctx, okey, &cm); err != nil {
			t.Fatal(err)
		}
		cm.Data["system-prompt.md"] = "the tenant's now\n"
		if err := tenant.Update(ctx, &cm); !refusedByPolicy(err) {
			t.Errorf("the tenant may change an orphan: %v", err)
		}
		// But not hand it a controller: one forged with a Persona's UID
		// under another group would put it out of the policy's reach.
		forged := metav1.OwnerReference{APIVersion: "x.example/v1", Kind: "Persona", Name: "o", UID: "forged-uid", Controller: ptr.To(true)}
		if err := editKey(tenant, okey, func(cm *corev1.ConfigMap) { cm.OwnerReferences = []metav1.OwnerReference{forged} }); !refusedByPolicy(err) {
			t.Errorf("the tenant may give an orphan a controller: %v", err)
		}
		if err := tenant.Create(ctx, persona(ns, "o", "After")); err != nil {
			t.Fatal(err)
		}
		waitPrompt(ctx, t, admin, ns, "o", "After") // adopted, by the new Persona's UID
		if err := editKey(tenant, okey, func(cm *corev1.ConfigMap) { cm.Data["system-prompt.md"] = "again\n" }); !refusedByPolicy(err) {
			t.Errorf("the tenant may change the adopted ConfigMap: %v", err)
		}
	})

	t.Run("the namespace controller deletes a deleted namespace's ConfigMaps", func(t *testing.T) {
		gone := "tenant-b"
		createNamespace(ctx, t, admin, gone)
		if err := admin.Create(ctx, persona(gone, "gone", "Gone")); err != nil {
			t.Fatal(err)
		}
		waitPrompt(ctx, t, admin, gone, "gone", "Gone")
		if err := admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gone}}); err != nil {
			t.Fatal(err)
		}
		nc := namespaceController.client(t, p)
		if err := nc.DeleteAllOf(ctx, persona(gone, "gone", ""), client.InNamespace(gone)); err != nil {
			t.Errorf("the namespace controller deletes the Personas: %v", err)
		}
		if err := nc.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(gone)); err != nil {
			t.Errorf("the namespace controller deletes the ConfigMaps: %v", err)
		}
		var left corev1.ConfigMapList
		if err := admin.List(ctx, &left, client.InNamespace(gone)); err != nil || len(left.Items) != 0 {
			t.Errorf("ConfigMaps left in %s: %d, %v", gone, len(left.Items), err)
		}
	})

	t.Run("deleting the CRDs deletes the Personas, and the garbage collector their ConfigMaps", func(t *testing.T) {
		crdList := func() *unstructured.UnstructuredList {
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion("apiextensions.k8s.io/v1")
			l.SetKind("CustomResourceDefinitionList")
			return l
		}
		crds := crdList()
		if err := admin.List(ctx, crds); err != nil {
			t.Fatal(err)
		}
		for i := range crds.Items {
			if err := admin.Delete(ctx, &crds.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(ctx, t, 60*time.Second, "the CRDs are gone", func() (bool, string) {
			left := crdList()
			if err := admin.List(ctx, left); err != nil {
				return false, err.Error()
			}
			return len(left.Items) == 0, strings.Repeat("a CRD left; ", len(left.Items))
		})
		if err := gc.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "persona-o"}}); err != nil {
			t.Errorf("the garbage collector deletes the ConfigMap of a Persona the CRD took along: %v", err)
		}
	})
	if strings.Contains(log.String(), "denied request") {
		t.Errorf("the policy refused the manager something:\n%s", log.Tail(8<<10))
	}
}

// refusedByPolicy reports whether err is the refusal of a ValidatingAdmissionPolicy.
// personaController is a controller owner reference to the Persona name.
func personaController(ctx context.Context, t *testing.T, c client.Client, namespace, name string) metav1.OwnerReference {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("prompts.persona-operator.dev/v1alpha1")
	u.SetKind("Persona")
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return metav1.OwnerReference{APIVersion: u.GetAPIVersion(), Kind: "Persona", Name: name, UID: u.GetUID(), Controller: ptr.To(true)}
}

func refusedByPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+configMapWriters+"'")
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// installWithTenant starts a control plane with dist/install.yaml, the
// aggregated roles and a tenant with edit in tenantNamespace, and the
// manager under its ServiceAccount's name; it returns the plane and the
// manager's log.
func installWithTenant(t *testing.T) (*controlplane.Plane, *controlplane.LogBuffer) {
	t.Helper()
	binary := buildManager(t)
	p, err := controlplane.StartEmpty()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	ctx := t.Context()
	installBundle(ctx, t, p, readManifest(t, "dist/install.yaml"))
	aggregateRoles(ctx, t, p.Client)
	createNamespace(ctx, t, p.Client, tenantNamespace)
	bindEdit(ctx, t, p.Client, tenantNamespace, tenantUser)
	return p, startManager(ctx, t, p, binary)
}
