package install

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

const (
	deploymentName = "persona-operator-controller-manager"
	managerRole    = "persona-operator-manager-role"
	webhookConfig  = "persona-operator-validating-webhook-configuration"
	webhookSecret  = "persona-operator-webhook-server-cert"
	certDir        = "/tmp/k8s-webhook-server/serving-certs"
)

// manager returns the chart's Deployment and its manager container.
func manager(t *testing.T, o objects) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	d, ok := decodeStrict(t, o.get(t, "Deployment", namespace, deploymentName)).(*appsv1.Deployment)
	if !ok || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the Deployment should have one container")
	}
	return d, d.Spec.Template.Spec.Containers[0]
}

func wantArgs(t *testing.T, c corev1.Container, want, notWant []string) {
	t.Helper()
	for _, a := range want {
		if !slices.Contains(c.Args, a) {
			t.Errorf("the manager's args %q lack %s", c.Args, a)
		}
	}
	for _, a := range notWant {
		for _, arg := range c.Args {
			if arg == a || strings.HasPrefix(arg, a+"=") {
				t.Errorf("the manager's args %q have %s", c.Args, arg)
			}
		}
	}
}

// A wrong value fails the render, with a message that names the value.
func TestChartSchemaRejectsWrongValues(t *testing.T) {
	for _, tc := range []struct{ set, names string }{
		{"replicas=two", "/replicas"},
		{"replicas=-1", "/replicas"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"watchNamespaces=team-a", "/watchNamespaces"},
		{"watchNamespaces[0]=Team_A", "/watchNamespaces/0"},
		{"metrics.secure=yes", "/metrics/secure"},
		{"webhook.timeoutSeconds=60", "/webhook/timeoutSeconds"},
		{"webhook.failurePolicy=Warn", "/webhook/failurePolicy"},
		{"referenceGracePeriod=two minutes", "/referenceGracePeriod"},
		{"templateSourceLabel=ignore", "/templateSourceLabel"},
		{"podDisruptionBudget.minAvailable=half", "/podDisruptionBudget/minAvailable"},
		{"certManager=true", "/certManager"},
		{"replica=3", "'replica'"},
		{"metrics.serviceMonitor.enable=true", "'enable'"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := helmTemplate(t, "--set", tc.set)
			if err == nil {
				t.Fatalf("--set %s rendered", tc.set)
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("--set %s: the error does not name %s:\n%v", tc.set, tc.names, err)
			}
		})
	}
}

// Combinations the schema cannot express fail the render with a message.
func TestChartRejectsInconsistentValues(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		error string
	}{
		{[]string{"--set", "rbac.namespaced=true"}, "rbac.namespaced needs watchNamespaces"},
		{[]string{"--set", "leaderElection.enabled=false"}, "replicas > 1 needs leaderElection.enabled"},
	} {
		_, err := helmTemplate(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.error) {
			t.Errorf("%v: want an error with %q, got %v", tc.args, tc.error, err)
		}
	}
}

// The defaults: the install of config/default (TestChartMatchesConfig
// compares them), every object valid for its type, the CRDs only in crds/.
func TestChartDefaults(t *testing.T) {
	o := renderChart(t)
	for _, u := range o {
		decodeStrict(t, u)
	}
	d, c := manager(t, o)
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
	}
	if c.Image != "ghcr.io/persona-operator/persona-operator:"+chartAppVersion(t) {
		t.Errorf("image %s, want the chart's appVersion", c.Image)
	}
	wantArgs(t, c, []string{"--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8443"},
		[]string{"--webhook-cert-path", "--watch-namespaces", "--reference-grace-period", "--template-source-label", "--metrics-secure"})
	if pdb := o.get(t, "PodDisruptionBudget", namespace, deploymentName); fmt.Sprint(field(pdb.Object, "spec", "minAvailable")) != "1" {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 1", field(pdb.Object, "spec", "minAvailable"))
	}
	vwc := o.get(t, "ValidatingWebhookConfiguration", "", webhookConfig)
	if len(vwc.GetAnnotations()) != 0 {
		t.Errorf("the webhook configuration has annotations %v", vwc.GetAnnotations())
	}
	for _, w := range asList(vwc.Object["webhooks"]) {
		if ca := field(w.(map[string]any), "clientConfig", "caBundle"); ca != nil {
			t.Errorf("webhook %v sets caBundle %v: the manager injects it", w.(map[string]any)["name"], ca)
		}
	}
	if s := o.get(t, "Secret", namespace, webhookSecret); s.Object["data"] != nil {
		t.Errorf("the shipped Secret has data: the manager writes it")
	}
	for _, u := range o.ofKind("ServiceMonitor", "NetworkPolicy", "Issuer", "Certificate") {
		t.Errorf("%s is not installed by default", keyOf(u))
	}

	// Helm never deletes, nor upgrades, what crds/ holds: the CRDs stay on
	// uninstall. No template may render one.
	withoutCRDs, err := helmTemplate(t, "--skip-crds")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range withoutCRDs {
		if u.GetKind() == "CustomResourceDefinition" {
			t.Errorf("a template renders the CRD %s: it belongs in crds/", u.GetName())
		}
	}
	if n := len(o.ofKind("CustomResourceDefinition")); n == 0 {
		t.Errorf("the chart has no CRDs")
	}
}

// watchNamespaces limits the manager (--watch-namespaces); with
// rbac.namespaced, its rights on namespaced objects move from its ClusterRole
// to a Role in each watched namespace, and it keeps the same rights.
func TestChartWatchNamespaces(t *testing.T) {
	cluster := renderChart(t)
	allRights := ruleAtoms(asList(cluster.get(t, "ClusterRole", "", managerRole).Object["rules"]))

	t.Run("cluster-wide rights", func(t *testing.T) {
		o := renderChart(t, "--set", "watchNamespaces={team-a,team-b}")
		_, c := manager(t, o)
		wantArgs(t, c, []string{"--watch-namespaces=team-a,team-b"}, nil)
		if n := len(o.ofKind("Role")) - len(cluster.ofKind("Role")); n != 0 {
			t.Errorf("%d more Roles than without watchNamespaces", n)
		}
		if got := ruleAtoms(asList(o.get(t, "ClusterRole", "", managerRole).Object["rules"])); !reflect.DeepEqual(got, allRights) {
			t.Errorf("the manager's ClusterRole changed with watchNamespaces alone")
		}
	})
	t.Run("namespaced rights", func(t *testing.T) {
		o := renderChart(t, "-f", root+"/dist/chart/ci/namespaced-values.yaml")
		for _, u := range o {
			decodeStrict(t, u)
		}
		_, c := manager(t, o)
		wantArgs(t, c, []string{"--watch-namespaces=team-a,team-b", "--reference-grace-period=5m", "--template-source-label=warn"}, nil)
		clusterRights := map[string]bool{}
		if o.has("ClusterRole", "", managerRole) {
			clusterRights = ruleAtoms(asList(o.get(t, "ClusterRole", "", managerRole).Object["rules"]))
		}
		for _, ns := range []string{"team-a", "team-b"} {
			role := o.get(t, "Role", ns, managerRole)
			binding := o.get(t, "RoleBinding", ns, "persona-operator-manager-rolebinding")
			if got := field(binding.Object, "roleRef", "name"); got != managerRole {
				t.Errorf("RoleBinding in %s binds %v", ns, got)
			}
			if !subjects(binding)["ServiceAccount "+namespace+"/"+deploymentName] {
				t.Errorf("RoleBinding in %s does not bind the manager's ServiceAccount", ns)
			}
			rights := ruleAtoms(asList(role.Object["rules"]))
			for r := range clusterRights {
				rights[r] = true
			}
			if missing := setDiff(allRights, rights); len(missing) > 0 {
				t.Errorf("in %s the manager lacks %v", ns, missing)
			}
			if extra := setDiff(rights, allRights); len(extra) > 0 {
				t.Errorf("in %s the manager has more: %v", ns, extra)
			}
			for r := range ruleAtoms(asList(role.Object["rules"])) {
				if clusterRights[r] {
					t.Errorf("%s is granted both cluster-wide and in %s", r, ns)
				}
			}
		}
		for r := range clusterRights {
			if strings.Contains(r, "configmaps") {
				t.Errorf("the ClusterRole still grants %s", r)
			}
		}
	})
}

// certManager.enabled: cert-manager issues the certificate into the Secret
// the Deployment mounts and injects the CA; the manager serves it and gets
// no rights to make its own.
func TestChartCertManager(t *testing.T) {
	o := renderChart(t, "-f", root+"/dist/chart/ci/cert-manager-values.yaml")
	d, c := manager(t, o)
	wantArgs(t, c, []string{"--webhook-cert-path=" + certDir}, nil)
	cert := o.get(t, "Certificate", namespace, "persona-operator-serving-cert")
	if got := field(cert.Object, "spec", "secretName"); got != webhookSecret {
		t.Errorf("the Certificate's Secret is %v", got)
	}
	wantDNS := []any{"persona-operator-webhook-service.persona-operator-system.svc", "persona-operator-webhook-service.persona-operator-system.svc.cluster.local"}
	if got := field(cert.Object, "spec", "dnsNames"); !reflect.DeepEqual(got, wantDNS) {
		t.Errorf("the Certificate's dnsNames %v, want %v", got, wantDNS)
	}
	issuer := o.get(t, "Issuer", namespace, "persona-operator-selfsigned-issuer")
	if field(cert.Object, "spec", "issuerRef", "name") != issuer.GetName() {
		t.Errorf("the Certificate's issuer is %v", field(cert.Object, "spec", "issuerRef"))
	}
	vwc := o.get(t, "ValidatingWebhookConfiguration", "", webhookConfig)
	if got := vwc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != namespace+"/persona-operator-serving-cert" {
		t.Errorf("cert-manager.io/inject-ca-from is %q", got)
	}
	mounted := false
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == webhookSecret {
			for _, m := range c.VolumeMounts {
				mounted = mounted || (m.Name == v.Name && m.MountPath == certDir)
			}
		}
	}
	if !mounted {
		t.Errorf("the Secret %s is not mounted at %s", webhookSecret, certDir)
	}
	for _, k := range []string{key("Secret", namespace, webhookSecret), key("Role", namespace, "persona-operator-webhook-cert-role"),
		key("ClusterRole", "", "persona-operator-webhook-config-role")} {
		if _, ok := o[k]; ok {
			t.Errorf("with cert-manager the chart still installs %s", k)
		}
	}
}

// metrics: HTTPS with authn/authz by default, plain HTTP, or off; a
// ServiceMonitor and NetworkPolicies on request.
func TestChartMetricsAndNetworkPolicy(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		o := renderChart(t, "--set", "metrics.secure=false")
		_, c := manager(t, o)
		wantArgs(t, c, []string{"--metrics-secure=false", "--metrics-bind-address=:8443"}, nil)
		svc := o.get(t, "Service", namespace, "persona-operator-metrics-service")
		if got := field(asList(field(svc.Object, "spec", "ports"))[0].(map[string]any), "name"); got != "http" {
			t.Errorf("the metrics port is named %v", got)
		}
		if o.has("ClusterRole", "", "persona-operator-metrics-auth-role") {
			t.Errorf("plain HTTP metrics still get the authn/authz ClusterRole")
		}
	})
	t.Run("off", func(t *testing.T) {
		o := renderChart(t, "--set", "metrics.enabled=false", "--set", "metrics.serviceMonitor.enabled=true")
		_, c := manager(t, o)
		wantArgs(t, c, []string{"--metrics-bind-address=0"}, nil)
		for _, u := range o.ofKind("Service", "ServiceMonitor") {
			if strings.Contains(u.GetName(), "metrics") {
				t.Errorf("metrics are off, and the chart installs %s", keyOf(u))
			}
		}
	})
	t.Run("ServiceMonitor and NetworkPolicy", func(t *testing.T) {
		o := renderChart(t, "-f", root+"/dist/chart/ci/monitoring-values.yaml")
		for _, u := range o {
			decodeStrict(t, u)
		}
		sm := o.get(t, "ServiceMonitor", namespace, "persona-operator-metrics-monitor")
		ep := asList(field(sm.Object, "spec", "endpoints"))[0].(map[string]any)
		if ep["port"] != "https" || ep["scheme"] != "https" || ep["interval"] != "30s" {
			t.Errorf("the ServiceMonitor's endpoint is %v", ep)
		}
		if got, want := field(ep, "tlsConfig", "serverName"), "persona-operator-metrics-service.persona-operator-system.svc"; got != want {
			t.Errorf("the ServiceMonitor's serverName is %v, want %s", got, want)
		}
		svc := o.get(t, "Service", namespace, "persona-operator-metrics-service")
		if !reflect.DeepEqual(field(sm.Object, "spec", "selector", "matchLabels"), field(svc.Object, "spec", "selector")) {
			t.Errorf("the ServiceMonitor selects %v", field(sm.Object, "spec", "selector"))
		}
		webhook := o.get(t, "NetworkPolicy", namespace, "persona-operator-allow-webhook-traffic")
		rule := asList(field(webhook.Object, "spec", "ingress"))[0].(map[string]any)
		if rule["from"] != nil || fmt.Sprint(field(asList(rule["ports"])[0].(map[string]any), "port")) != "9443" {
			t.Errorf("the webhook's NetworkPolicy admits %v: want port 9443 from anywhere", rule)
		}
		metrics := o.get(t, "NetworkPolicy", namespace, "persona-operator-allow-metrics-traffic")
		rule = asList(field(metrics.Object, "spec", "ingress"))[0].(map[string]any)
		if rule["from"] == nil || fmt.Sprint(field(asList(rule["ports"])[0].(map[string]any), "port")) != "8443" {
			t.Errorf("the metrics' NetworkPolicy admits %v: want port 8443 from namespaces labelled metrics=enabled", rule)
		}
		if o.has("PodDisruptionBudget", namespace, deploymentName) {
			t.Errorf("one replica, and a PodDisruptionBudget that would block every drain")
		}
	})
}

// Scheduling values reach the pod; a topology spread constraint without a
// labelSelector gets the pod's labels, one with a labelSelector keeps it.
func TestChartScheduling(t *testing.T) {
	o := renderChart(t,
		"--set", "nodeSelector.kubernetes\\.io/os=linux",
		"--set", "tolerations[0].key=dedicated,tolerations[0].operator=Exists",
		"--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=kubernetes.io/arch",
		"--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
		"--set", "topologySpreadConstraints[0].maxSkew=2,topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname,topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
		"--set", "topologySpreadConstraints[1].maxSkew=1,topologySpreadConstraints[1].topologyKey=zone,topologySpreadConstraints[1].whenUnsatisfiable=ScheduleAnyway,topologySpreadConstraints[1].labelSelector.matchLabels.app=x",
		"--set", "resources.limits.memory=1Gi",
		"--set", "image.tag=v9.9.9",
	)
	d, c := manager(t, o)
	spec := d.Spec.Template.Spec
	if spec.NodeSelector["kubernetes.io/os"] != "linux" || len(spec.Tolerations) != 1 || spec.Affinity == nil || spec.Affinity.NodeAffinity == nil {
		t.Errorf("nodeSelector %v, tolerations %v, affinity %v", spec.NodeSelector, spec.Tolerations, spec.Affinity)
	}
	if len(spec.TopologySpreadConstraints) != 2 {
		t.Fatalf("topologySpreadConstraints %v", spec.TopologySpreadConstraints)
	}
	if ts := spec.TopologySpreadConstraints[0]; ts.MaxSkew != 2 || ts.WhenUnsatisfiable != "DoNotSchedule" ||
		!reflect.DeepEqual(ts.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("topologySpreadConstraints[0] %v", ts)
	}
	if ts := spec.TopologySpreadConstraints[1]; !reflect.DeepEqual(ts.LabelSelector.MatchLabels, map[string]string{"app": "x"}) {
		t.Errorf("topologySpreadConstraints[1] %v: its labelSelector was replaced", ts)
	}
	if c.Resources.Limits.Memory().String() != "1Gi" || c.Image != "ghcr.io/persona-operator/persona-operator:v9.9.9" {
		t.Errorf("resources %v, image %s", c.Resources, c.Image)
	}
}

// chartAppVersion is Chart.yaml's appVersion.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	chart := readManifest(t, chartDir+"/Chart.yaml")
	for _, u := range chart {
		if v, ok := u.Object["appVersion"].(string); ok {
			return v
		}
	}
	t.Fatal("Chart.yaml has no appVersion")
	return ""
}

// How the webhooks know the API servers' connections: the networks and the
// client CA become flags, the CA's ConfigMap a volume at the flag's path;
// the checks run, with their Role, unless turned off.
func TestChartControlPlane(t *testing.T) {
	defaults := renderChart(t)
	_, c := manager(t, defaults)
	wantArgs(t, c, nil, []string{"--webhook-control-plane-networks", "--webhook-control-plane-checks=false", "--webhook-client-ca"})
	if !defaults.has("Role", namespace, "persona-operator-control-plane-check-role") || !defaults.has("RoleBinding", namespace, "persona-operator-control-plane-check-rolebinding") {
		t.Error("the checks are on by default, without the Role they need")
	}
	set := renderChart(t, "--set", "webhook.controlPlane.networks={10.0.0.0/24,fd00::/64}", "--set", "webhook.controlPlane.checks=false",
		"--set", "webhook.controlPlane.clientCAConfigMap=apiserver-client-ca")
	if set.has("Role", namespace, "persona-operator-control-plane-check-role") {
		t.Error("the checks are off, and the chart still grants their Role")
	}
	d, c := manager(t, set)
	wantArgs(t, c, []string{"--webhook-control-plane-networks=10.0.0.0/24,fd00::/64", "--webhook-control-plane-checks=false",
		"--webhook-client-ca=/etc/persona-operator/webhook-client-ca/ca.crt"}, nil)
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == "webhook-client-ca" && m.MountPath == "/etc/persona-operator/webhook-client-ca" && m.ReadOnly {
			mounted = true
		}
	}
	volume := false
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "webhook-client-ca" && v.ConfigMap != nil && v.ConfigMap.Name == "apiserver-client-ca" &&
			len(v.ConfigMap.Items) == 1 && v.ConfigMap.Items[0].Key == "ca.crt" && v.ConfigMap.Items[0].Path == "ca.crt" {
			volume = true
		}
	}
	if !mounted || !volume {
		t.Errorf("the client CA's ConfigMap is mounted %v, a volume %v: want both, at the flag's path", mounted, volume)
	}
	if _, err := helmTemplate(t, "--set", "webhook.controlPlane.networks={10.0.0.0}"); err == nil {
		t.Error("the chart takes a network without its prefix length")
	}
}
