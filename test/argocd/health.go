// Package argocd runs the Argo CD health check of config/argocd the way
// Argo CD does, so tests can check it without a cluster. config/argocd
// installs it in two forms: a kustomize Component merged into argocd-cm,
// and configs.cm values for Argo CD's Helm chart.
package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// componentDir holds the health script and the component installing it.
const componentDir = "config/argocd"

// helmValuesFile holds the values for Argo CD's Helm chart.
const helmValuesFile = "helm-values.yaml"

// HealthKey is the argocd-cm key of the health check of kind.
func HealthKey(kind string) string {
	return "resource.customizations.health.prompts.persona-operator.dev_" + kind
}

// Script returns the health script of the repository at repoRoot.
func Script(repoRoot string) (string, error) {
	b, err := os.ReadFile(filepath.Join(repoRoot, componentDir, "health.lua"))
	return string(b), err
}

// scriptTimeout bounds a run, as Argo CD bounds its own, so a looping
// script fails instead of hanging.
const scriptTimeout = time.Second

// Health runs script with obj as the global obj and returns the status and
// message of the table it returns. Like a script from argocd-cm in Argo CD,
// it gets only the package, base and table libraries.
func Health(script string, obj map[string]any) (status, message string, err error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage,
		lua.BaseLibName: lua.OpenBase,
		lua.TabLibName:  lua.OpenTable,
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			return "", "", fmt.Errorf("open Lua library %q: %w", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	l.SetContext(ctx)

	value, err := toLua(l, obj)
	if err != nil {
		return "", "", err
	}
	l.SetGlobal("obj", value)
	if err := l.DoString(script); err != nil {
		return "", "", err
	}
	hs, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("health script returned %s, not a table", l.Get(-1).Type())
	}
	st, ok := hs.RawGetString("status").(lua.LString)
	if !ok || !validStatus[string(st)] {
		// Argo CD would show Unknown; a test wants to know why.
		return "", "", fmt.Errorf("health script returned invalid status %v", hs.RawGetString("status"))
	}
	switch m := hs.RawGetString("message").(type) {
	case lua.LString:
		message = string(m)
	case *lua.LNilType:
	default:
		return "", "", fmt.Errorf("health script returned a %s message, not a string", m.Type())
	}
	return string(st), message, nil
}

// validStatus are the health statuses Argo CD accepts from a script.
var validStatus = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true,
	"Suspended": true, "Missing": true, "Unknown": true,
}

// toLua converts a decoded JSON or YAML value, or a hand-written one using
// Go integers, to Lua: objects and arrays become tables, numbers LNumber.
func toLua(l *lua.LState, v any) (lua.LValue, error) {
	switch v := v.(type) {
	case nil:
		return lua.LNil, nil
	case bool:
		return lua.LBool(v), nil
	case string:
		return lua.LString(v), nil
	case int:
		return lua.LNumber(v), nil
	case int32:
		return lua.LNumber(v), nil
	case int64:
		return lua.LNumber(v), nil
	case float64:
		return lua.LNumber(v), nil
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			lv, err := toLua(l, item)
			if err != nil {
				return nil, err
			}
			t.Append(lv)
		}
		return t, nil
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			lv, err := toLua(l, item)
			if err != nil {
				return nil, err
			}
			t.RawSetString(k, lv)
		}
		return t, nil
	}
	return nil, fmt.Errorf("cannot convert %T to Lua", v)
}

// baseArgoCDConfig is the argocd-cm the component is merged into; its data
// must survive the merge.
const baseArgoCDConfig = `apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  namespace: argocd
  labels:
    app.kubernetes.io/name: argocd-cm
    app.kubernetes.io/part-of: argocd
data:
  url: https://argocd.example.com
`

// PatchKeys builds the component of repoRoot on top of a minimal Argo CD
// installation and returns the data of the resulting argocd-cm in the
// argocd namespace.
func PatchKeys(repoRoot string) (map[string]string, error) {
	fs := filesys.MakeFsInMemory()
	entries, err := os.ReadDir(filepath.Join(repoRoot, componentDir))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, componentDir, e.Name()))
		if err != nil {
			return nil, err
		}
		if err := fs.WriteFile(filepath.Join("/component", e.Name()), b); err != nil {
			return nil, err
		}
	}
	install := map[string]string{
		"/install/kustomization.yaml": "resources:\n- argocd-cm.yaml\ncomponents:\n- ../component\n",
		"/install/argocd-cm.yaml":     baseArgoCDConfig,
	}
	for name, text := range install {
		if err := fs.WriteFile(name, []byte(text)); err != nil {
			return nil, err
		}
	}

	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/install")
	if err != nil {
		return nil, err
	}
	for _, r := range resources.Resources() {
		if r.GetKind() == "ConfigMap" && r.GetName() == "argocd-cm" && r.GetNamespace() == "argocd" {
			return r.GetDataMap(), nil
		}
	}
	return nil, fmt.Errorf("build of %s has no ConfigMap argocd/argocd-cm", componentDir)
}

// HelmValuesKeys returns configs.cm of the Helm values of repoRoot: the keys
// Argo CD's chart writes into argocd-cm. The file is read strictly, so a
// misspelt level fails rather than installing nothing.
func HelmValuesKeys(repoRoot string) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, componentDir, helmValuesFile))
	if err != nil {
		return nil, err
	}
	var values struct {
		Configs struct {
			CM map[string]string `json:"cm"`
		} `json:"configs"`
	}
	if err := yaml.UnmarshalStrict(raw, &values); err != nil {
		return nil, fmt.Errorf("%s: %w", helmValuesFile, err)
	}
	return values.Configs.CM, nil
}

// Forms returns the argocd-cm data each form of config/argocd installs,
// by the form's name.
func Forms(repoRoot string) (map[string]map[string]string, error) {
	component, err := PatchKeys(repoRoot)
	if err != nil {
		return nil, fmt.Errorf("kustomize Component: %w", err)
	}
	helm, err := HelmValuesKeys(repoRoot)
	if err != nil {
		return nil, fmt.Errorf("the Helm values: %w", err)
	}
	return map[string]map[string]string{"kustomize Component": component, "Helm values": helm}, nil
}
