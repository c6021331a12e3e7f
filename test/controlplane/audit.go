package controlplane

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// WithAuditLog has env's API server write the metadata of every request
// to an audit log in dir, whose path it returns; pass the function to
// Start or StartEmpty.
func WithAuditLog(dir string) (configure func(*envtest.Environment), path string, err error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	const metadataOfAll = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
	if err := os.WriteFile(policy, []byte(metadataOfAll), 0o600); err != nil {
		return nil, "", err
	}
	path = filepath.Join(dir, "audit.log")
	return func(env *envtest.Environment) {
		if env.ControlPlane.APIServer == nil {
			env.ControlPlane.APIServer = &envtest.APIServer{}
		}
		env.ControlPlane.APIServer.Configure().Set("audit-policy-file", policy).Set("audit-log-path", path)
	}, path, nil
}

// Audited is what one user's requests in an audit log used.
type Audited struct {
	// Used are the rights its resource requests used, in RuleRights' form,
	// with the resourceName when a right of granted names it.
	Used map[string]bool
	// NonResource are the paths of its other requests.
	NonResource []string
	// Refused are its requests the API server refused, as "verb URI".
	Refused []string
}

// auditEvent is what AuditedRequests reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Verb             string            `json:"verb"`
	RequestURI       string            `json:"requestURI"`
	User             auditUser         `json:"user"`
	ImpersonatedUser *auditUser        `json:"impersonatedUser"`
	Annotations      map[string]string `json:"annotations"`
	ObjectRef        *struct {
		Resource, Subresource, Name string
		APIGroup                    string `json:"apiGroup"`
	} `json:"objectRef"`
}

type auditUser struct {
	Username string `json:"username"`
}

// AuditedRequests reads the audit log at path for the requests of user
// (impersonated or not), granted being the rights its roles grant.
func AuditedRequests(path, user string, granted map[string]bool) (Audited, error) {
	out := Audited{Used: map[string]bool{}}
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	for lines.Scan() {
		var e auditEvent
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			return out, fmt.Errorf("audit log: %w", err)
		}
		as := e.User.Username
		if e.ImpersonatedUser != nil {
			as = e.ImpersonatedUser.Username
		}
		if as != user {
			continue
		}
		if e.Annotations["authorization.k8s.io/decision"] == "forbid" {
			out.Refused = append(out.Refused, e.Verb+" "+e.RequestURI)
		}
		if e.ObjectRef == nil || e.ObjectRef.Resource == "" {
			out.NonResource = append(out.NonResource, e.RequestURI)
			continue
		}
		resource := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			resource += "/" + e.ObjectRef.Subresource
		}
		what := fmt.Sprintf("%q %s", e.ObjectRef.APIGroup, resource)
		if named := what + " " + e.ObjectRef.Name + ": " + e.Verb; e.ObjectRef.Name != "" && granted[named] {
			out.Used[named] = true
			continue
		}
		out.Used[what+": "+e.Verb] = true
	}
	return out, lines.Err()
}

// RuleRights expands RBAC rules, as decoded from YAML or JSON, into one
// string per right they grant: `"group" resource: verb`, with the
// resourceName after the resource when a rule names some, and
// `nonResourceURL url: verb`.
func RuleRights(rules []any) map[string]bool {
	out := map[string]bool{}
	strs := func(rule map[string]any, f string) []string {
		var s []string
		list, _ := rule[f].([]any)
		for _, v := range list {
			s = append(s, fmt.Sprint(v))
		}
		return s
	}
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		verbs := strs(rule, "verbs")
		for _, url := range strs(rule, "nonResourceURLs") {
			for _, verb := range verbs {
				out[fmt.Sprintf("nonResourceURL %s: %s", url, verb)] = true
			}
		}
		names := strs(rule, "resourceNames")
		if len(names) == 0 {
			names = []string{""}
		}
		for _, group := range strs(rule, "apiGroups") {
			for _, res := range strs(rule, "resources") {
				for _, name := range names {
					for _, verb := range verbs {
						what := fmt.Sprintf("%q %s", group, res)
						if name != "" {
							what += " " + name
						}
						out[what+": "+verb] = true
					}
				}
			}
		}
	}
	return out
}
