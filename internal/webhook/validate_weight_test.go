package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/persona-operator/persona-operator/internal/render"
)

// TestValidationWeightCoversWhatAReviewAllocates: for the shapes of object
// whose JSON decodes to the most memory a byte, in every part the
// validation reads and in the parts it never walks (status, metadata),
// the validating webhook, from the review to its answer, allocates no more
// than the review weighs without the parse tree of a template (they have a
// template of one byte), with the garbage collector off, so that every
// allocation counts.
func TestValidationWeightCoversWhatAReviewAllocates(t *testing.T) {
	const n = 256 << 10
	var keys, vars, labels, badLabels, overrideKeys strings.Builder
	for i := 0; keys.Len() < n; i++ {
		fmt.Fprintf(&keys, `,"k%d":0`, i)
		fmt.Fprintf(&vars, `,"k%d":""`, i)
		fmt.Fprintf(&labels, `,"k%d":"v"`, i)
		fmt.Fprintf(&badLabels, `,"not a key %d":"v"`, i)
	}
	for i := range 150 {
		fmt.Fprintf(&overrideKeys, `,"u%d":1`, i)
	}
	guardrail := func(selector string) string {
		return `{"apiVersion":"prompts.persona-operator.dev/v1alpha1","kind":"ClusterPromptLayer","metadata":{"name":"g"},"spec":{"template":"x","namespaceSelector":{` + selector + `}}}`
	}
	persona := func(metadata, spec, status string) string {
		return `{"apiVersion":"prompts.persona-operator.dev/v1alpha1","kind":"Persona","metadata":{"name":"p","namespace":"ns"` + metadata + `},"spec":{"prompt":"x"` + spec + `}` + status + `}`
	}
	shapes := map[string]string{
		"empty extensions":           persona("", `,"systemPrompt":{"extensions":[`+repeat("{}", n)+`]}`, ""),
		"empty variants":             persona("", `,"variants":[`+repeat("{}", n)+`]`, ""),
		"empty layers":               persona("", `,"layers":[`+repeat("{}", n)+`]`, ""),
		"bad inherited names":        persona("", `,"inherit":[`+repeat(`"A"`, n)+`]`, ""),
		"unknown keys":               persona("", keys.String(), ""),
		"empty variables":            persona("", `,"vars":{"a":""`+vars.String()+`}`, ""),
		"empty context tasks":        persona("", `,"context":{"tasks":[`+repeat("{}", n)+`]}`, ""),
		"zeros in an unknown key":    persona("", `,"x":[`+repeat("0", n)+`]`, ""),
		"nested empty arrays":        persona("", `,"x":[`+repeat("[]", n)+`]`, ""),
		"empty objects in status":    persona("", "", `,"status":{"x":[`+repeat("{}", n)+`]}`),
		"zeros in status":            persona("", "", `,"status":{"x":[`+repeat("0", n)+`]}`),
		"many labels":                persona(`,"labels":{"a":"b"`+labels.String()+`}`, "", ""),
		"empty managed fields":       persona(`,"managedFields":[`+repeat("{}", n)+`]`, "", ""),
		"empty selector expressions": guardrail(`"matchExpressions":[` + repeat("{}", n) + `]`),
		"bad selector values":        guardrail(`"matchExpressions":[{"key":"team","operator":"In","values":[` + repeat(`"not a value!"`, n) + `]}]`),
		"bad selector label keys":    guardrail(`"matchLabels":{"a":"b"` + badLabels.String() + `}`),
		// One key of n bytes in the path of every error under it (an
		// override's unknown keys).
		"a long key in every path": persona("", `,"systemPrompt":{"platform":{"`+strings.Repeat("k", n)+`":{"replace":"x"`+overrideKeys.String()+`}}}`, ""),
		// A value of the wrong type in an error, of the bytes encoding/json
		// writes as six.
		"a list for the pin":           persona(`,"annotations":{"prompts.persona-operator.dev/pin-revision":["`+strings.Repeat("<", n)+`"]}`, "", ""),
		"escaped bytes in status":      persona("", "", `,"status":{"x":"`+strings.Repeat("&", n)+`"}`),
		"escaped selector label value": guardrail(`"matchLabels":{"team":"` + strings.Repeat("<", n) + `"}`),
		"escaped bytes in a template":  persona("", `,"systemPrompt":{"platform":{"waiver":{"replace":"`+strings.Repeat("<", 60<<10)+`"}}}`, ""),
	}
	limits := render.Default().Limits()
	inflight := newInflight(limits)
	handler := &webhook.Admission{Handler: &Validator{}}
	for name, object := range shapes {
		body := objectReview(t, "u", []byte(object))
		tokens := jsonTokens(body)
		weight := inflight.requestWeight(int64(len(body))) - int64(limits.MaxParsedBytes(len(body))) + inflight.tokenWeight*tokens +
			inflight.escapeWeight*escapedBytes(body)
		rec, allocated := allocatedServing(handler, PersonaPath, body)
		t.Logf("%-27s %7d bytes, %6d tokens: allocated %5.1f MiB (%4.0f a token), weighs %5.1f MiB", name, len(body), tokens, float64(allocated)/(1<<20), float64(allocated)/float64(tokens), float64(weight)/(1<<20))
		if rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", name, rec.Code, rec.Body)
		}
		if allocated > weight {
			t.Errorf("%s: the validation allocated %d bytes, more than its weight of %d", name, allocated, weight)
		}
	}
}

// TestDenseReviewsAreRefusedBeforeDecoding: a review of just under the
// 7 MiB limit, sent by anyone who reaches the port, whose object is
// millions of empty objects, names or zeros, in spec or where validation
// never walks, is cut short for its tokens as soon as those arrived are
// more than its lane could let in, unread past them and undecoded: it
// allocates little, where decoded it took the heap 36 to 193 MiB past the
// lane's bound.
func TestDenseReviewsAreRefusedBeforeDecoding(t *testing.T) {
	srv := httptest.NewServer(newInflight(render.Default().Limits()).wrap(&webhook.Admission{Handler: &Validator{}}))
	defer srv.Close()
	for _, shape := range []struct{ name, spec, elem, tail string }{
		{"empty extensions", `{"systemPrompt":{"extensions":[`, `{}`, `]}}`},
		{"empty variants", `{"variants":[`, `{}`, `]}`},
		{"bad inherited names", `{"inherit":[`, `"A"`, `]}`},
		{"empty objects in status", `{"prompt":"x"},"status":{"x":[`, `{}`, `]}`},
		{"zeros in status", `{"prompt":"x"},"status":{"x":[`, `0`, `]}`},
	} {
		head := `{"apiVersion":"prompts.persona-operator.dev/v1alpha1","kind":"Persona","metadata":{"name":"p","namespace":"ns"},"spec":` + shape.spec
		object := head + repeat(shape.elem, maxRequestBytes-(16<<10)-len(head)) + shape.tail + `}`
		body := objectReview(t, "u", []byte(object))
		var resp *http.Response
		var err error
		var answer []byte
		start := time.Now()
		var took time.Duration
		allocated := allocatedDuring(func() {
			resp, err = http.Post(srv.URL+"/?timeout=10s", "application/json", bytes.NewReader(body))
			took = time.Since(start)
			if err == nil {
				answer, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", shape.name, err)
		}
		t.Logf("%-24s %.2f MiB: %d after %v, allocated %.1f MiB: %s", shape.name, float64(len(body))/(1<<20), resp.StatusCode, took.Round(time.Millisecond), float64(allocated)/(1<<20), bytes.TrimSpace(answer))
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(answer), "JSON tokens") {
			t.Errorf("%s: %d %s; want 413 for its JSON tokens", shape.name, resp.StatusCode, answer)
		}
		// What arrived of the body before its tokens were too many.
		if most := int64(1 << 20); allocated > most {
			t.Errorf("%s: refusing a review of %d bytes allocated %d bytes, more than %d", shape.name, len(body), allocated, most)
		}
	}
}

// TestJSONTokensBoundTheDecodersTokens: the count is never below the
// tokens encoding/json's decoder reads, strings with quotes, brackets and
// commas inside them included, and the same however the body arrives.
func TestJSONTokensBoundTheDecodersTokens(t *testing.T) {
	for _, doc := range []string{
		`0`, `""`, `"a,b:c{[\"]}"`, `[]`, `{}`, `[0]`, `[0,1,2]`, `[[],[[]],{}]`, `{"a":1}`, `{"a":{"b":[1,{"c":"\\"}]},"d":null}`,
		`{"k\":{":"v,[]","w":[true,false,null,-1.5e3]}`, ` { "a" : [ 1 , 2 ] } `,
	} {
		dec := json.NewDecoder(strings.NewReader(doc))
		var read int64
		for {
			if _, err := dec.Token(); err != nil {
				if err != io.EOF {
					t.Fatalf("%s: %v", doc, err)
				}
				break
			}
			read++
		}
		counted := jsonTokens([]byte(doc))
		if counted < read {
			t.Errorf("%s: counted %d tokens, the decoder read %d", doc, counted, read)
		}
		// As it arrives, in two parts split anywhere, the count is the same.
		for i := range len(doc) {
			c := newTokenCount()
			c.add([]byte(doc[:i]))
			c.add([]byte(doc[i:]))
			if c.tokens != counted {
				t.Errorf("%s split at %d: counted %d tokens, %d whole", doc, i, c.tokens, counted)
			}
		}
	}
}

// TestReviewsThatAreNotUTF8AreRefused: JSON is UTF-8 and the API server
// writes nothing else, while decoding turns each invalid byte into three:
// both webhooks refuse such a body before decoding it.
func TestReviewsThatAreNotUTF8AreRefused(t *testing.T) {
	object := `{"apiVersion":"prompts.persona-operator.dev/v1alpha1","kind":"Persona","metadata":{"name":"p","namespace":"ns"},"spec":{"prompt":"` +
		strings.Repeat("\xff", 256<<10) + `"}}`
	body := bytes.Replace(objectReview(t, "u", []byte(`{"kind":"Persona"}`)), []byte(`{"kind":"Persona"}`), []byte(object), 1)
	for _, c := range []struct {
		name string
		srv  http.Handler
	}{
		{"validating", newInflight(render.Default().Limits()).wrap(&webhook.Admission{Handler: &Validator{}})},
		{"injecting", (&Injector{Personas: failing{}, ConfigMaps: failing{}}).Handler()},
	} {
		srv := httptest.NewServer(c.srv)
		resp, err := http.Post(srv.URL+"/mutate--v1-pod?timeout=10s", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), "not valid UTF-8") {
			t.Errorf("%s: a review of 256 KiB of invalid UTF-8: %d %s; want 400", c.name, resp.StatusCode, answer)
		}
	}
}
