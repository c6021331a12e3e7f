package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/cli"
	"github.com/persona-operator/persona-operator/test/fixtures"
	"github.com/persona-operator/persona-operator/test/suite"
)

// kubectl persona history and rollback work on the revisions the operator keeps.
var _ = Describe("kubectl-persona history and rollback", func() {
	It("lists, prints and diffs revisions, and pins one and removes the pin", func() {
		ns := suite.NewNamespace()
		current := func() int64 { return suite.GetPersona(ns, "p").Status.CurrentRevision }
		suite.Apply(ns, fixtures.BarePersona("p", "One"))
		Eventually(current).Should(Equal(int64(1)))
		suite.Apply(ns, fixtures.BarePersona("p", "Two"))
		Eventually(current).Should(Equal(int64(2)))
		snapshot := func(n int) *corev1.ConfigMap {
			var cm corev1.ConfigMap
			Eventually(func() error {
				return suite.K8s.Get(suite.Ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("persona-p.r%d", n)}, &cm)
			}).Should(Succeed())
			return &cm
		}
		r1, r2 := snapshot(1), snapshot(2)
		kubeconfig := kubeconfigWithContext("envtest", ns)
		persona := func(args ...string) (int, string, string) {
			var out, errOut bytes.Buffer
			code := cli.Run(append(args, "--kubeconfig", kubeconfig, "--context", "envtest"), nil, &out, &errOut)
			return code, out.String(), errOut.String()
		}
		hash := func(cm *corev1.ConfigMap) string {
			return cm.Annotations["prompts.persona-operator.dev/content-hash"]
		}
		short := func(cm *corev1.ConfigMap) string { return hash(cm)[:len("sha256:")+12] }
		size := func(cm *corev1.ConfigMap) string {
			n := 0
			for k, v := range cm.Data {
				n += len(k) + len(v)
			}
			return strconv.Itoa(n)
		}
		// table is the history's rows, split into their fields; the age,
		// which counts on, is checked and left out.
		table := func(out string) [][]string {
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			Expect(strings.Fields(lines[0])).To(Equal([]string{"REVISION", "HASH", "AGE", "CAUSE", "BYTES", "STATUS"}))
			var rows [][]string
			for _, l := range lines[1:] {
				f := strings.Fields(l)
				Expect(f[2]).To(MatchRegexp(`^[0-9]+s$`), "age of %q", l)
				rows = append(rows, append(f[:2:2], f[3:]...))
			}
			return rows
		}

		By("listing the two revisions, the second delivered and latest")
		code, out, errOut := persona("history", "p")
		Expect(code).To(Equal(0), errOut)
		Expect(table(out)).To(Equal([][]string{
			{"1", short(r1), "Persona/p@1", size(r1)},
			{"2", short(r2), "Persona/p@2", size(r2), "delivered,latest"},
		}))

		By("listing no ConfigMap of a snapshot's name that p controls without a snapshot's labels")
		forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "persona-p.r99",
			Annotations: map[string]string{"prompts.persona-operator.dev/content-hash": hash(r1)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "p",
				UID: suite.GetPersona(ns, "p").UID, Controller: ptr.To(true)}}},
			Data: map[string]string{"system-prompt.md": "Forged\n", "revision.json": `{"revision":99}`}}
		Expect(suite.K8s.Create(suite.Ctx, forged)).To(Succeed())
		code, out, errOut = persona("history", "p")
		Expect(code).To(Equal(0), errOut)
		Expect(table(out)).To(HaveLen(2))
		code, _, errOut = persona("history", "p", "--revision", "99")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("revision 99 has no snapshot"))
		Expect(suite.K8s.Delete(suite.Ctx, forged)).To(Succeed())

		By("failing with status 1, not 2, when the output cannot be written")
		for _, args := range [][]string{{"history", "p"}, {"history", "p", "-o", "json"}, {"history", "p", "--revision", "1"}} {
			var errOut bytes.Buffer
			code := cli.Run(append(args, "--kubeconfig", kubeconfig, "--context", "envtest"), nil, closedPipe{}, &errOut)
			Expect(code).To(Equal(cli.ExitInvalid), "%q: %s", args, errOut.String())
			Expect(errOut.String()).To(ContainSubstring("write the output"), "%q", args)
		}

		By("listing them as JSON")
		code, out, _ = persona("history", "p", "-o", "json")
		Expect(code).To(Equal(0))
		var h struct {
			Namespace, Persona              string
			CurrentRevision, LatestRevision int64
			Revisions                       []struct {
				Revision                  int64
				ContentHash, Snapshot     string
				Bytes                     int
				Delivered, Latest, Pinned bool
			}
		}
		Expect(json.Unmarshal([]byte(out), &h)).To(Succeed())
		Expect(h.Namespace).To(Equal(ns))
		Expect(h.Persona).To(Equal("p"))
		Expect(h.CurrentRevision).To(Equal(int64(2)))
		Expect(h.LatestRevision).To(Equal(int64(2)))
		Expect(h.Revisions).To(HaveLen(2))
		Expect(h.Revisions[0].Revision).To(Equal(int64(1)))
		Expect(h.Revisions[0].ContentHash).To(Equal(hash(r1)))
		Expect(h.Revisions[0].Snapshot).To(Equal("persona-p.r1"))
		Expect(strconv.Itoa(h.Revisions[0].Bytes)).To(Equal(size(r1)))
		Expect(h.Revisions[0].Delivered || h.Revisions[0].Latest).To(BeFalse())
		Expect(h.Revisions[1].Delivered && h.Revisions[1].Latest).To(BeTrue())

		By("printing revision 1: its prompt, its snapshot, its revision.json")
		code, out, _ = persona("history", "p", "--revision", "1")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("One\n"))
		code, out, _ = persona("history", "p", "--revision", "1", "-o", "configmap")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("name: persona-p.r1\n"))
		Expect(out).To(ContainSubstring("immutable: true\n"))
		Expect(out).To(ContainSubstring("system-prompt.md: |\n    One\n"))
		code, out, _ = persona("history", "p", "--revision", "1", "-o", "json")
		Expect(code).To(Equal(0))
		var rec struct {
			Revision    int64
			ContentHash string
		}
		Expect(json.Unmarshal([]byte(out), &rec)).To(Succeed())
		Expect(rec.Revision).To(Equal(int64(1)))
		Expect(rec.ContentHash).To(Equal(hash(r1)))

		By("diffing revision 1 against the delivered one, with kubectl diff's statuses")
		code, out, _ = persona("history", "p", "--revision", "1", "--diff")
		Expect(code).To(Equal(cli.DiffFound))
		Expect(out).To(Equal("persona " + ns + "/p system-prompt.md\n" +
			"--- r1/" + ns + "/p/system-prompt.md\n" +
			"+++ live/" + ns + "/p/system-prompt.md\n" +
			"@@ -1 +1 @@\n" +
			"-One\n" +
			"+Two\n"))
		code, out, _ = persona("history", "p", "--revision", "2", "--diff")
		Expect(code).To(Equal(cli.DiffNone))
		Expect(out).To(BeEmpty())
		code, _, errOut = persona("history", "p", "--revision", "9", "--diff")
		Expect(code).To(Equal(cli.DiffError))
		Expect(errOut).To(ContainSubstring("revision 9 has no snapshot persona-p.r9"))

		By("refusing a rollback to a revision without a snapshot, and pinning none")
		code, _, errOut = persona("rollback", "p", "--to-revision", "9")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(Equal("error: persona " + ns + "/p: revision 9 has no snapshot persona-p.r9 (never kept, or pruned); 'kubectl persona history p' lists those left\n"))
		Expect(suite.GetPersona(ns, "p").Annotations).NotTo(HaveKey("prompts.persona-operator.dev/pin-revision"))

		By("failing at once, not at --timeout, when the operator refuses the pin: a snapshot that does not hold what it wrote")
		tampered := r1.DeepCopy()
		tampered.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "persona-p.r77", Labels: map[string]string{
			"app.kubernetes.io/managed-by": "persona-operator", "prompts.persona-operator.dev/persona": "p", "prompts.persona-operator.dev/revision": "77"},
			Annotations: map[string]string{"prompts.persona-operator.dev/content-hash": "sha256:0"}, OwnerReferences: r1.OwnerReferences}
		Expect(suite.K8s.Create(suite.Ctx, tampered)).To(Succeed())
		start := time.Now()
		code, _, errOut = persona("rollback", "p", "--to-revision", "77", "--timeout", "5m")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("Pinned=False RevisionNotFound: revision 77"))
		Expect(time.Since(start)).To(BeNumerically("<", time.Minute))
		Expect(suite.K8s.Delete(suite.Ctx, tampered)).To(Succeed())

		By("rolling back to revision 1: the pin is set, waited for, and its diff printed")
		code, out, errOut = persona("rollback", "p", "--to-revision", "1", "--timeout", "30s")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("persona " + ns + "/p system-prompt.md\n" +
			"--- before/" + ns + "/p/system-prompt.md\n" +
			"+++ after/" + ns + "/p/system-prompt.md\n" +
			"@@ -1 +1 @@\n" +
			"-Two\n" +
			"+One\n"))
		Expect(errOut).To(Equal("persona " + ns + "/p pinned to revision 1: revision 1 is delivered; the latest is 2\n"))
		p := suite.GetPersona(ns, "p")
		Expect(p.Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/pin-revision", "1"))
		Expect(p.Status.PinnedRevision).To(Equal(int64(1)))
		Expect(suite.ConfigMap(ns, "p").Data).To(Equal(r1.Data))
		code, out, _ = persona("history", "p")
		Expect(code).To(Equal(0))
		Expect(table(out)).To(Equal([][]string{
			{"1", short(r1), "Persona/p@1", size(r1), "delivered,pinned"},
			{"2", short(r2), "Persona/p@2", size(r2), "latest"},
		}))

		By("clearing the pin: the latest is delivered again")
		code, out, errOut = persona("rollback", "p", "--clear")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("persona " + ns + "/p system-prompt.md\n" +
			"--- before/" + ns + "/p/system-prompt.md\n" +
			"+++ after/" + ns + "/p/system-prompt.md\n" +
			"@@ -1 +1 @@\n" +
			"-One\n" +
			"+Two\n"))
		Expect(errOut).To(Equal("persona " + ns + "/p unpinned: revision 2 is delivered\n"))
		Expect(suite.GetPersona(ns, "p").Annotations).NotTo(HaveKey("prompts.persona-operator.dev/pin-revision"))

		By("refusing usage errors with status 2")
		for _, args := range [][]string{
			{"rollback", "p"},
			{"rollback", "p", "--clear", "--to-revision", "1"},
			{"rollback", "--clear"},
			{"history", "p", "--diff"},
			{"history", "p", "--revision", "0"},
			{"history", "p", "--revision", "1", "-o", "text"},
		} {
			code, _, _ := persona(args...)
			Expect(code).To(Equal(cli.ExitUsage), "%q", args)
		}
	})
})

// closedPipe is standard output whose reader is gone.
type closedPipe struct{}

func (closedPipe) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }
