package controllers_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/internal/cli"
)

// The ConfigMap the operator writes equals what kubectl-persona renders
// offline from the same manifests.
var _ = Describe("kubectl-persona parity", func() {
	It("renders the samples exactly as the operator writes them", func() {
		ns := newNamespace()
		files, personas := applySamples(ns)
		for _, name := range personas {
			Eventually(ready(ns, name)).Should(Equal("Rendered"), name)
			var out, errOut bytes.Buffer
			args := append([]string{"render", "-n", ns, "--persona", name, "-o", "configmap"}, flagsFor(files)...)
			Expect(cli.Run(args, nil, &out, &errOut)).To(Equal(0), errOut.String())
			var offline corev1.ConfigMap
			Expect(yaml.UnmarshalStrict(out.Bytes(), &offline)).To(Succeed())
			online := configMap(ns, name)
			Expect(online.Data).To(Equal(offline.Data), name)
			Expect(online.Labels).To(Equal(offline.Labels), name)
			Expect(online.Annotations).To(Equal(offline.Annotations), name)
			Expect(online.Name).To(Equal(offline.Name))
		}
	})
})

func flagsFor(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, "-f", f)
	}
	return out
}
