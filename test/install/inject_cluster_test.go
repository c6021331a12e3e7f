package install

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A labelled pod mounts only bytes the operator wrote: with
// dist/install.yaml's policies and pod injection on a real API server, and
// the manager under its ServiceAccount's name, a tenant (the aggregated
// edit role in its namespace) can neither write a persona-* ConfigMap nor
// have a pod mount one the operator did not write, nor bring its own
// persona-prompt volume, nor shadow the prompt by a relative mountPath; a
// pod created before its Persona still gets the Persona's ConfigMap.
func TestInjectionMountsOnlyTheOperatorsConfigMaps(t *testing.T) {
	p, log := installWithTenant(t)
	ctx := t.Context()
	admin := p.Client
	tenant := identity{tenantUser, []string{"system:authenticated"}}.client(t, p)
	ns := tenantNamespace

	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"system-prompt.md": "the tenant's\n"}}
	}
	// agent is a pod labelled with the Persona persona.
	agent := func(persona string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "agent-", Namespace: ns, Labels: map[string]string{"prompts.persona-operator.dev/persona": persona}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}},
		}
	}
	// refusedByInjection checks that err is the pod injection's refusal,
	// naming each of want.
	refusedByInjection := func(t *testing.T, err error, want ...string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), `admission webhook "mpod.persona-operator.dev" denied the request`) {
			t.Fatalf("not refused by the pod injection: %v", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the refusal %q does not name %q", err, w)
			}
		}
	}
	promptVolume := func(pod *corev1.Pod) string {
		for _, v := range pod.Spec.Volumes {
			if v.Name == "persona-prompt" && v.ConfigMap != nil {
				return v.ConfigMap.Name
			}
		}
		return ""
	}
	const label = "metadata.labels[prompts.persona-operator.dev/persona]"

	// persona-ghost made before the policy kept the name: an administrator's
	// now. The API server loads a new policy within a moment.
	ghost := configMap("persona-ghost")
	if err := admin.Create(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 10*time.Second, "the policy refuses the tenant", func() (bool, string) {
		forged := configMap("forged")
		forged.Labels = map[string]string{"app.kubernetes.io/managed-by": "persona-operator"}
		err := tenant.Create(ctx, forged)
		return refusedByPolicy(err), errString(err)
	})

	t.Run("a tenant may not create or update a persona-* ConfigMap, and may delete its own", func(t *testing.T) {
		rule := "persona-<name> ConfigMaps are written only by persona-operator; name yours otherwise"
		for what, do := range map[string]func() error{
			"create persona-ghost-2":   func() error { return tenant.Create(ctx, configMap("persona-ghost-2")) },
			"create a snapshot's name": func() error { return tenant.Create(ctx, configMap("persona-ghost.r1")) },
			"create one by generateName": func() error {
				return tenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "persona-"}})
			},
			"update the pre-existing persona-ghost": func() error {
				cm := &corev1.ConfigMap{}
				if err := admin.Get(ctx, client.ObjectKeyFromObject(ghost), cm); err != nil {
					return err
				}
				cm.Data["system-prompt.md"] = "forged\n"
				return tenant.Update(ctx, cm)
			},
		} {
			if err := do(); !refusedByPolicy(err) || !strings.Contains(err.Error(), rule) {
				t.Errorf("the tenant may %s: %v", what, err)
			}
		}
		if err := tenant.Create(ctx, configMap("ghost-prompt")); err != nil {
			t.Errorf("create a ConfigMap of another name: %v", err)
		}
		// The install's own namespace is not a tenant's: its parameter
		// ConfigMap, whose name has the prefix, stays an installer's to write.
		bindEdit(ctx, t, admin, namespace, "installer")
		installer := identity{"installer", []string{"system:authenticated"}}.client(t, p)
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var params corev1.ConfigMap
			if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: configMapWriters}, &params); err != nil {
				return err
			}
			params.Data["groups"] += "break-glass\n"
			return installer.Update(ctx, &params)
		}); err != nil {
			t.Errorf("an installer with edit in %s may not update %s: %v", namespace, configMapWriters, err)
		}
		old := configMap("persona-old")
		if err := admin.Create(ctx, old); err != nil {
			t.Fatal(err)
		}
		if err := tenant.Delete(ctx, old); err != nil {
			t.Errorf("delete a persona-* ConfigMap made before the policy: %v", err)
		}
	})

	t.Run("no Persona: a pod whose persona-<name> exists is refused", func(t *testing.T) {
		refusedByInjection(t, tenant.Create(ctx, agent("ghost")), label, "ConfigMap persona-ghost is not the prompt of persona ghost", "no Persona ghost exists")
		handMounted := agent("ghost")
		handMounted.Spec.Volumes = []corev1.Volume{{Name: "prompt", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "persona-ghost"}}}}}
		handMounted.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "prompt", MountPath: "/etc/persona"}}
		refusedByInjection(t, tenant.Create(ctx, handMounted), "spec.volumes[0].configMap.name", "ConfigMap persona-ghost")
	})

	t.Run("a Persona in ConfigMapConflict: its pods are refused", func(t *testing.T) {
		if err := admin.Create(ctx, configMap("persona-conflict")); err != nil {
			t.Fatal(err)
		}
		if err := tenant.Create(ctx, persona(ns, "conflict", "Conflict")); err != nil {
			t.Fatal(err)
		}
		waitReady(ctx, t, admin, ns, "conflict", "ConfigMapConflict")
		refusedByInjection(t, tenant.Create(ctx, agent("conflict")), label, "ConfigMap persona-conflict", "persona conflict does not control it")
	})

	t.Run("after kubectl delete persona --cascade=orphan, its pods are refused", func(t *testing.T) {
		if err := tenant.Create(ctx, persona(ns, "o", "Orphaned")); err != nil {
			t.Fatal(err)
		}
		waitPrompt(ctx, t, admin, ns, "o", "Orphaned")
		waitFor(ctx, t, 10*time.Second, "the Persona's pod gets its snapshot", func() (bool, string) {
			pod := agent("o")
			err := tenant.Create(ctx, pod)
			return err == nil && promptVolume(pod) == "persona-o.r1", errString(err) + ", volume of " + promptVolume(pod)
		})
		if err := tenant.Delete(ctx, persona(ns, "o", ""), client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
			t.Fatal(err)
		}
		finishOrphanDelete(ctx, t, admin, garbageCollector.client(t, p), ns, "o", "persona-o", "persona-o.r1")
		refusedByInjection(t, tenant.Create(ctx, agent("o")), label, "ConfigMap persona-o is not the prompt of persona o")
		// Nor may the tenant change the orphan's data meanwhile.
		var cm corev1.ConfigMap
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "persona-o"}, &cm); err != nil {
			t.Fatal(err)
		}
		cm.Data["system-prompt.md"] = "the tenant's now\n"
		if err := tenant.Update(ctx, &cm); !refusedByPolicy(err) {
			t.Errorf("the tenant may change an orphan: %v", err)
		}
	})

	// A pod created before its Persona (GitOps order) gets the live
	// ConfigMap, which the Persona then renders; the next one its snapshot.
	early := agent("late")
	t.Run("a pod created before its Persona is admitted, and mounts the Persona's ConfigMap", func(t *testing.T) {
		if err := tenant.Create(ctx, early); err != nil {
			t.Fatalf("a pod created before its Persona: %v", err)
		}
		if got := promptVolume(early); got != "persona-late" {
			t.Fatalf("its prompt volume mounts %q, want persona-late", got)
		}
		if err := tenant.Create(ctx, persona(ns, "late", "Late")); err != nil {
			t.Fatal(err)
		}
		waitPrompt(ctx, t, admin, ns, "late", "Late") // the ConfigMap early mounts, the Persona's
		waitFor(ctx, t, 10*time.Second, "a pod created since gets the snapshot", func() (bool, string) {
			next := agent("late")
			err := tenant.Create(ctx, next)
			return err == nil && promptVolume(next) == "persona-late.r1", errString(err) + ", volume of " + promptVolume(next)
		})
	})

	t.Run("a pod's own persona-prompt volume with items is refused", func(t *testing.T) {
		pod := agent("late")
		pod.Spec.Volumes = []corev1.Volume{{Name: "persona-prompt", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "persona-late"},
			Items:                []corev1.KeyToPath{{Key: "persona.md", Path: "system-prompt.md"}}}}}}
		refusedByInjection(t, tenant.Create(ctx, pod), "spec.volumes[0].configMap.items")
	})

	t.Run("a hand mount of the prompt beside a persona-prompt volume of its own is refused", func(t *testing.T) {
		// In the exact shape the webhook writes, naming the live ConfigMap,
		// beside a whole hand mount: left alone, the hand mount would keep
		// the webhook from checking the volume.
		pod := agent("late")
		pod.Spec.Volumes = []corev1.Volume{
			{Name: "persona-prompt", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "persona-late"}}}},
			{Name: "by-hand", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "persona-late"}}}},
		}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "by-hand", MountPath: "/prompt", ReadOnly: true}}
		refusedByInjection(t, tenant.Create(ctx, pod), "by hand", "mount the prompt one way")
	})

	t.Run("a relative mountPath that shadows the prompt is refused", func(t *testing.T) {
		if err := tenant.Create(ctx, configMap("mine")); err != nil {
			t.Fatal(err)
		}
		pod := agent("late")
		pod.Spec.Volumes = []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "mine"}}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: "etc/persona/system-prompt.md", SubPath: "system-prompt.md"}}
		refusedByInjection(t, tenant.Create(ctx, pod), "spec.containers[0].volumeMounts[0].mountPath", "shadow the prompt")
	})

	if strings.Contains(log.String(), "denied request") {
		t.Errorf("the policy refused the manager something:\n%s", log.Tail(8<<10))
	}
}
