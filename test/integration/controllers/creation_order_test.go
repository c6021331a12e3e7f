package controllers

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

// GitOps tools and `kubectl apply -f DIR` create a whole set of objects
// within milliseconds, concurrently and in any order. Whatever the order,
// every Persona must become Ready within seconds of the last object it needs
// existing, even when that object's create event reaches the controller
// before the status of the render that missed it reaches the manager's cache.
var _ = Describe("Order never matters: whatever the creation order", func() {
	// readyWithin is how long after the last object it needs exists a
	// Persona must be Ready.
	const readyWithin = 10 * time.Second

	var fast client.Client
	BeforeEach(func() { fast = unthrottledClient() })

	It("renders every persona of a graph created concurrently in a random order (30 seeded trials)", func() {
		const trials = 30
		// Trials run this many at a time: a stuck trial waits readyWithin,
		// so even a controller that loses every race keeps the spec near a
		// minute.
		const atOnce = 10
		base := uint64(GinkgoRandomSeed())

		type trial struct {
			ns   string
			seed uint64
			objs []*unstructured.Unstructured
			// took is from the last create to both personas Ready.
			took    time.Duration
			failure string
		}
		all := make([]*trial, trials)
		for i := range all {
			t := &trial{ns: newNamespace(), seed: base + uint64(i)}
			refs, children := orderGraph(t.ns, "child")
			t.objs = shuffled(rand.New(rand.NewPCG(t.seed, 0)), append(refs, children...))
			all[i] = t
		}

		var wg sync.WaitGroup
		slots := make(chan struct{}, atOnce)
		for _, t := range all {
			wg.Go(func() {
				slots <- struct{}{}
				defer func() { <-slots }()
				last, err := createAtOnce(fast, t.objs)
				if err != nil {
					t.failure = "create: " + err.Error()
					return
				}
				took, stuck := awaitRendered(t.ns, []string{"parent", "child"}, last, readyWithin)
				var problems []string
				for _, name := range slices.Sorted(maps.Keys(stuck)) {
					problems = append(problems, fmt.Sprintf("%s not Ready %s after the last create: %s", name, readyWithin, stuck[name]))
				}
				for name, want := range map[string]string{"parent": wantParent(t.ns), "child": wantChild(t.ns, "child")} {
					if _, ok := took[name]; ok {
						if got := prompt(t.ns, name)(); got != want {
							problems = append(problems, fmt.Sprintf("system-prompt.md of %s is %q, want %q", name, got, want))
						}
					}
				}
				t.failure = strings.Join(problems, "; ")
				if t.failure == "" {
					t.took = slices.Max(slices.Collect(maps.Values(took)))
				}
			})
		}
		wg.Wait()

		var times []time.Duration
		var failures []string
		for i, t := range all {
			if t.failure != "" {
				failures = append(failures, fmt.Sprintf("trial %d (namespace %s, seed %d, order %s): %s", i, t.ns, t.seed, order(t.objs), t.failure))
				continue
			}
			times = append(times, t.took)
		}
		summary := fmt.Sprintf("%d of %d trials Ready within %s (base seed %d, rerun with -ginkgo.seed=%d); time to Ready after the last create: %s",
			len(times), trials, readyWithin, base, base, spread(times))
		GinkgoWriter.Println(summary)
		AddReportEntry("order: 30 concurrent trials", summary)
		if len(failures) > 0 {
			Fail(fmt.Sprintf("%s\n%d trials failed (stuck, or a wrong prompt):\n%s", summary, len(failures), strings.Join(failures, "\n")))
		}
	})

	It("renders a wave of 150 children created concurrently before their references in any order", func() {
		ns := newNamespace()
		const n = 150
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("child-%03d", i)
		}
		refs, children := orderGraph(ns, names...)
		seed := uint64(GinkgoRandomSeed())
		rng := rand.New(rand.NewPCG(seed, 1))
		children, refs = shuffled(rng, children), shuffled(rng, refs)

		_, err := createAtOnce(fast, children)
		Expect(err).NotTo(HaveOccurred(), "create the children (seed %d)", seed)
		last, err := createAtOnce(fast, refs)
		Expect(err).NotTo(HaveOccurred(), "create the references (seed %d, order %s)", seed, order(refs))

		took, stuck := awaitRendered(ns, append([]string{"parent"}, names...), last, readyWithin)
		var times []time.Duration
		for _, name := range names {
			if d, ok := took[name]; ok {
				times = append(times, d)
			}
		}
		summary := fmt.Sprintf("%d of %d children Ready within %s of the last reference (seed %d, references in the order %s); time to Ready: %s",
			len(times), n, readyWithin, seed, order(refs), spread(times))
		GinkgoWriter.Println(summary)
		AddReportEntry("order: a wave of 150 children", summary)
		var lines []string
		for _, name := range slices.Sorted(maps.Keys(stuck)) {
			lines = append(lines, name+": "+stuck[name])
		}
		if len(stuck) > 0 {
			Fail(fmt.Sprintf("%s\n%d personas got stuck:\n%s", summary, len(stuck), strings.Join(lines, "\n")))
		}

		Expect(prompt(ns, "parent")()).To(Equal(wantParent(ns)))
		for _, name := range names {
			Expect(prompt(ns, name)()).To(Equal(wantChild(ns, name)), "seed %d", seed)
		}
	})

	Context("created one by one, the object the child needs last", func() {
		var ns string
		BeforeEach(func() { ns = newNamespace() })

		// suppliedLast supplies the missing object once the child reports it
		// missing, which proves the child rendered without it, and requires
		// every persona of want Ready with its prompt within readyWithin.
		suppliedLast := func(missing string, supply func(), want map[string]string) {
			Eventually(ready(ns, "child")).Should(Equal("ReferenceNotFound"))
			Expect(readyMessage(ns, "child")).To(ContainSubstring(missing))
			supply()
			start := time.Now()
			for name, text := range want {
				Eventually(ready(ns, name), readyWithin-time.Since(start)).Should(Equal("Rendered"), "%s, after supplying what was missing (%s)", name, missing)
				Expect(prompt(ns, name)()).To(Equal(text), name)
			}
			GinkgoWriter.Printf("Ready %s after supplying what was missing (%s)\n", time.Since(start), missing)
		}

		It("renders a child whose parent is created after it", func() {
			apply(ns, personaManifest("child", []string{"parent"}, nil, extension{ID: "note", Template: "Child note"}))
			suppliedLast(`Persona "parent" (referenced by persona "child") not found`,
				func() {
					apply(ns, personaManifest("parent", nil, nil, extension{ID: "parent_note", Template: "Parent note"}))
				},
				map[string]string{
					// The chain's extensions in chain order: the parent's, then the child's.
					"child":  "Parent note\n\nChild note\n",
					"parent": "Parent note\n",
				})
		})

		It("renders a grandchild whose grandparent, listing a layer, is created last", func() {
			apply(ns, layerManifest("grand-layer", "package", "append", "Grand layer"))
			apply(ns, personaManifest("parent", []string{"grand"}, nil, extension{ID: "parent_note", Template: "Parent note"}))
			apply(ns, personaManifest("child", []string{"parent"}, nil, extension{ID: "note", Template: "Child note"}))
			Eventually(ready(ns, "parent")).Should(Equal("ReferenceNotFound"))
			suppliedLast(`Persona "grand" (referenced by persona "parent") not found`,
				func() {
					apply(ns, personaManifest("grand", nil, []string{"grand-layer"}, extension{ID: "grand_note", Template: "Grand note"}))
				},
				map[string]string{
					// Extensions in chain order (grand, parent, child), then the
					// grandparent's layer, which the whole chain has.
					"child":  "Grand note\n\nParent note\n\nChild note\n\nGrand layer\n",
					"parent": "Grand note\n\nParent note\n\nGrand layer\n",
					"grand":  "Grand note\n\nGrand layer\n",
				})
		})

		It("renders a child whose parent's layer includes a fragment created last", func() {
			apply(ns, layerManifest("listed", "package", "append", `Listed layer, then {{ include "frag" . }}`))
			apply(ns, personaManifest("parent", nil, []string{"listed"}, extension{ID: "parent_note", Template: "Parent note"}))
			apply(ns, personaManifest("child", []string{"parent"}, nil, extension{ID: "note", Template: "Child note"}))
			Eventually(ready(ns, "parent")).Should(Equal("ReferenceNotFound"))
			suppliedLast(`PromptLayer "frag" (referenced by layer "listed") not found`,
				func() { apply(ns, layerManifest("frag", "package", "append", "Fragment text")) },
				map[string]string{
					// The included text stands where the include is, inside the
					// piece of the layer that the child inherits from its parent.
					"child":  "Parent note\n\nChild note\n\nListed layer, then Fragment text\n",
					"parent": "Parent note\n\nListed layer, then Fragment text\n",
				})
		})

		It("renders a child whose templateFrom ConfigMap is created last", func() {
			cm, layer := agentsObjects(ns, `{AGENTS.md: "Agents text"}`)
			Expect(createOrUpdate(layer)).To(Succeed())
			apply(ns, personaManifest("child", nil, []string{"agents-md"}, extension{ID: "note", Template: "Child note"}))
			suppliedLast(`ConfigMap "agents" (referenced by layer "agents-md") not found`,
				func() { Expect(createOrUpdate(cm)).To(Succeed()) },
				map[string]string{"child": "Child note\n\nAgents text\n"})
		})

		It("renders a child once its templateFrom ConfigMap gains the key by an update", func() {
			cm, layer := agentsObjects(ns, `{OTHER.md: "Other text"}`)
			Expect(createOrUpdate(cm)).To(Succeed())
			Expect(createOrUpdate(layer)).To(Succeed())
			apply(ns, personaManifest("child", nil, []string{"agents-md"}, extension{ID: "note", Template: "Child note"}))
			suppliedLast(`key "AGENTS.md" of ConfigMap "agents" (referenced by layer "agents-md") not found`,
				func() {
					updated, _ := agentsObjects(ns, `{OTHER.md: "Other text", AGENTS.md: "Agents text"}`)
					Expect(createOrUpdate(updated)).To(Succeed())
				},
				map[string]string{"child": "Child note\n\nAgents text\n"})
		})
	})
})

// orderGraph is the objects of one namespace's graph, every text piece
// naming itself and the namespace: the ConfigMap agents and the PromptLayer
// agents-md (source app) reading its AGENTS.md; the PromptLayer frag,
// reached only through an include in the children's extension; the
// PromptLayer shared (source run), listed by the Persona parent; and one
// Persona per child name, inheriting parent and listing agents-md. It
// returns the children apart from the rest, their references.
func orderGraph(ns string, children ...string) (refs, kids []*unstructured.Unstructured) {
	cm, fromCM := agentsObjects(ns, `{AGENTS.md: "AGENTS.md in `+ns+`"}`)
	refs = []*unstructured.Unstructured{cm, fromCM}
	refs = append(refs, objects(ns, layerManifest("frag", "package", "append", "Fragment in "+ns))...)
	refs = append(refs, objects(ns, layerManifest("shared", "run", "append", "Shared layer in "+ns))...)
	refs = append(refs, objects(ns, personaManifest("parent", nil, []string{"shared"},
		extension{ID: "parent_note", Template: "Parent note in " + ns}))...)
	for _, c := range children {
		kids = append(kids, objects(ns, personaManifest(c, []string{"parent"}, []string{"agents-md"},
			extension{ID: "note", Template: "Note of " + c + " in " + ns},
			extension{ID: "fragment", Template: `{{ include "frag" . }}`}))...)
	}
	return refs, kids
}

// wantParent is the system prompt of orderGraph's parent: its extension,
// then its layer.
func wantParent(ns string) string {
	return "Parent note in " + ns + "\n\n" +
		"Shared layer in " + ns + "\n"
}

// wantChild is the system prompt of a child of orderGraph: the chain's
// extensions in chain order (the parent's note, the child's note, the
// fragment its include renders), then the layers by source rank, agents-md
// (app) before shared (run) although the chain lists shared first.
func wantChild(ns, child string) string {
	return "Parent note in " + ns + "\n\n" +
		"Note of " + child + " in " + ns + "\n\n" +
		"Fragment in " + ns + "\n\n" +
		"AGENTS.md in " + ns + "\n\n" +
		"Shared layer in " + ns + "\n"
}

// personaManifest is a bare Persona (bareManifest) with parents, layers and
// several extensions of distinct ids (an extension of a parent's id would
// replace the parent's in place).
func personaManifest(name string, inherit, layers []string, exts ...extension) string {
	var more []string
	if len(inherit) > 0 {
		more = append(more, "inherit: ["+strings.Join(inherit, ", ")+"]")
	}
	if len(layers) > 0 {
		refs := make([]string, len(layers))
		for i, l := range layers {
			refs[i] = "{name: " + l + "}"
		}
		more = append(more, "layers: ["+strings.Join(refs, ", ")+"]")
	}
	return bareManifest(name, exts, more...)
}

// agentsObjects is agentsLayer's ConfigMap agents and PromptLayer agents-md, apart.
func agentsObjects(ns, data string) (cm, layer *unstructured.Unstructured) {
	objs := objects(ns, agentsLayer(data))
	Expect(objs).To(HaveLen(2))
	return objs[0], objs[1]
}

// unthrottledClient is an administrator's client the way GitOps tools and
// kubectl use one under load: no client-side rate limit.
func unthrottledClient() client.Client {
	cfg := rest.CopyConfig(plane.Config)
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: controlplane.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// createAtOnce creates objs with c, one goroutine each, all released
// together, and returns when the last create returned.
func createAtOnce(c client.Client, objs []*unstructured.Unstructured) (time.Time, error) {
	release := make(chan struct{})
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for i, o := range objs {
		wg.Go(func() {
			<-release
			if err := c.Create(ctx, o); err != nil {
				errs[i] = fmt.Errorf("%s/%s: %w", o.GetKind(), o.GetName(), err)
			}
		})
	}
	close(release)
	wg.Wait()
	return time.Now(), errors.Join(errs...)
}

// shuffled shuffles objs in place with rng and returns them.
func shuffled(rng *rand.Rand, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	rng.Shuffle(len(objs), func(i, j int) { objs[i], objs[j] = objs[j], objs[i] })
	return objs
}

// order names objs, Kind/name, in their order.
func order(objs []*unstructured.Unstructured) string {
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.GetKind() + "/" + o.GetName()
	}
	return strings.Join(names, ", ")
}

// awaitRendered polls the Personas of ns, listing them all at once, until
// each of names is Ready as ready() reports it (reason Rendered at its
// current generation) or limit has passed since since. took is when after
// since each was first seen Ready; stuck is, for each that never was, its
// last Ready condition.
func awaitRendered(ns string, names []string, since time.Time, limit time.Duration) (took map[string]time.Duration, stuck map[string]string) {
	took = map[string]time.Duration{}
	last := map[string]string{}
	for {
		var list v1alpha1.PersonaList
		err := k8s.List(ctx, &list, client.InNamespace(ns))
		seen := time.Since(since)
		for _, p := range list.Items {
			if _, done := took[p.Name]; done {
				continue
			}
			c := meta.FindStatusCondition(p.Status.Conditions, "Ready")
			switch {
			case c == nil || c.ObservedGeneration != p.Generation:
				last[p.Name] = "no Ready condition for the current generation"
			case c.Reason == "Rendered":
				took[p.Name] = seen
			default:
				last[p.Name] = c.Reason + ": " + c.Message
			}
		}
		stuck = map[string]string{}
		for _, n := range names {
			if _, done := took[n]; !done {
				stuck[n] = cmp.Or(last[n], "not listed")
				if err != nil {
					stuck[n] += "; list: " + err.Error()
				}
			}
		}
		if len(stuck) == 0 || time.Since(since) > limit {
			return took, stuck
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// spread is the count, median and maximum of times.
func spread(times []time.Duration) string {
	if len(times) == 0 {
		return "none"
	}
	sorted := slices.Sorted(slices.Values(times))
	return fmt.Sprintf("median %s, max %s over %d", sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), len(sorted))
}
