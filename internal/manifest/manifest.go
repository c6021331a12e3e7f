// Package manifest reads Kubernetes manifests from files, directories and
// standard input the way kubectl-persona needs them: every Persona and
// PromptLayer, and the core v1 ConfigMaps a templateFrom may read, each
// remembered with the file and document it came from. A Set is also a
// resolve.Lookup, so references among the manifests resolve offline exactly
// as they do against the cluster.
package manifest

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// DefaultNamespace is the namespace of objects without metadata.namespace
// when no other is given, as with kubectl.
const DefaultNamespace = "default"

// Stdin is the path that reads standard input.
const Stdin = "-"

// StdinName is how documents read from standard input are named in origins.
const StdinName = "<stdin>"

// ClusterName is how objects read from a cluster (AddFromCluster) are
// named in origins.
const ClusterName = "<cluster>"

// Origin is where a document came from.
type Origin struct {
	// File is the path as given or found in a directory; StdinName for stdin.
	File string
	// Doc is the 1-based index of the document in the file. Documents that
	// hold only blank lines and comments are not counted.
	Doc int
	// Item is the 1-based index in the items of a List document; 0 when the
	// object is the document itself.
	Item int
	// seq orders origins by the order files were read.
	seq int
}

func (o Origin) String() string {
	s := fmt.Sprintf("%s:%d", o.File, o.Doc)
	if o.Item > 0 {
		s += fmt.Sprintf(":items[%d]", o.Item-1)
	}
	return s
}

// Compare orders origins by the order their files were read, then document
// and item.
func (o Origin) Compare(p Origin) int {
	return cmp.Or(cmp.Compare(o.seq, p.seq), cmp.Compare(o.Doc, p.Doc), cmp.Compare(o.Item, p.Item))
}

// Object is one kept object.
type Object struct {
	Origin Origin
	Kind   string
	// Name is metadata.name; empty when missing or not a string (admission
	// reports it).
	Name string
	// Namespace is metadata.namespace, or the default namespace of the read.
	Namespace string
	// Raw is the object as decoded, unchanged: admission validates it.
	Raw map[string]any

	// decoded is Raw's typed decode, copied out by each Decode of its
	// type: a resolve of each Persona of a chain reads the same parents.
	mu      sync.Mutex
	decoded client.Object
}

// Ref is Kind/name, how problems name the object.
func (o *Object) Ref() string {
	name := o.Name
	if name == "" {
		name = "(unnamed)"
	}
	return o.Kind + "/" + name
}

// Problem is an input problem found while reading, tied to a document.
type Problem struct {
	Origin Origin
	// Object is Kind/name when the problem belongs to a known object.
	Object string
	// Field is the field path the problem is about, or empty.
	Field string
	// Reason is the Ready reason the operator reports the problem with
	// (personas.md#conditions), or empty for a problem admission refuses.
	Reason  string
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Origin.String())
	if p.Object != "" {
		b.WriteString(" " + p.Object)
	}
	b.WriteString(": ")
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Options configure a read.
type Options struct {
	// Namespace is given to objects without metadata.namespace;
	// DefaultNamespace when empty.
	Namespace string
	// Stdin is read for the path "-".
	Stdin io.Reader
}

// Set is the objects read from manifests.
type Set struct {
	objects []*Object
	index   map[key]*Object
	// Problems are the document problems found while reading: documents
	// that do not parse, unknown kinds of our group, duplicates. The
	// objects of the other documents are kept.
	Problems []Problem
	// Documents counts the non-empty documents read.
	Documents int
	ns        string
	seq       int
	stdinRead bool
	// read are the files read, by absolute path: a file reached twice (a
	// directory and a file in it) is read once.
	read map[string]bool
}

type key struct{ kind, namespace, name string }

// Read reads the manifests at paths. A path that cannot be read is an error;
// problems of single documents are collected in Set.Problems.
func Read(paths []string, opts Options) (*Set, error) {
	s := New(opts.Namespace)
	for _, p := range paths {
		if err := s.readPath(p, opts.Stdin); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// New returns an empty set whose objects without a namespace get ns
// (DefaultNamespace when empty).
func New(ns string) *Set {
	return &Set{index: map[key]*Object{}, ns: cmp.Or(ns, DefaultNamespace), read: map[string]bool{}}
}

func (s *Set) readPath(path string, stdin io.Reader) error {
	if path == Stdin {
		if s.stdinRead {
			return errors.New("standard input (-) is given more than once")
		}
		s.stdinRead = true
		if stdin == nil {
			stdin = os.Stdin
		}
		raw, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("read standard input: %w", err)
		}
		s.Add(StdinName, raw)
		return nil
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the path %q does not exist", path)
	}
	if err != nil {
		return err
	}
	files := []string{path}
	if info.IsDir() {
		if files, err = ManifestFiles(path); err != nil {
			return err
		}
	}
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			if s.read[abs] {
				continue
			}
			s.read[abs] = true
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		s.Add(f, raw)
	}
	return nil
}

// ManifestFiles lists the manifest files under dir, recursively: names ending
// in .yaml, .yml or .json, sorted by path. Hidden files and directories
// (a name starting with a dot, such as .git) are skipped.
func ManifestFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		hidden := p != dir && strings.HasPrefix(d.Name(), ".")
		if d.IsDir() {
			if hidden {
				return filepath.SkipDir
			}
			return nil
		}
		if hidden || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// Add reads the documents of one file's content.
func (s *Set) Add(file string, raw []byte) {
	s.seq++
	docs, err := splitDocuments(raw)
	for i, doc := range docs {
		s.Documents++
		s.addDocument(Origin{File: file, Doc: i + 1, seq: s.seq}, doc)
	}
	if err != nil {
		s.problem(Origin{File: file, Doc: len(docs) + 1, seq: s.seq}, "", "", err.Error())
	}
}

func (s *Set) problem(o Origin, object, fld, msg string) {
	s.Problems = append(s.Problems, Problem{Origin: o, Object: object, Field: fld, Message: msg})
}

// document is one document's bytes and whether it is JSON.
type document struct {
	raw  []byte
	json bool
}

// CountDocuments counts the non-empty documents of a file, as Read splits
// them.
func CountDocuments(raw []byte) (int, error) {
	docs, err := splitDocuments(raw)
	return len(docs), err
}

// splitDocuments splits a file into its non-empty documents: a stream of
// JSON values when it starts with "{", multi-document YAML otherwise. The
// error stops the split; the documents before it are returned.
func splitDocuments(raw []byte) ([]document, error) {
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		var docs []document
		dec := json.NewDecoder(bytes.NewReader(t))
		for {
			var doc json.RawMessage
			err := dec.Decode(&doc)
			if err == io.EOF {
				return docs, nil
			}
			if err != nil {
				return docs, fmt.Errorf("invalid JSON: %w", err)
			}
			docs = append(docs, document{raw: doc, json: true})
		}
	}
	return splitYAML(raw)
}

// splitYAML splits multi-document YAML into its non-empty documents.
func splitYAML(raw []byte) ([]document, error) {
	var docs []document
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return docs, fmt.Errorf("invalid YAML: %w", err)
		}
		if isEmptyYAML(doc) {
			continue
		}
		docs = append(docs, document{raw: doc})
	}
}

// isEmptyYAML reports whether a document holds only blank lines, comments
// and document end markers.
func isEmptyYAML(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && string(t) != "..." {
			return false
		}
	}
	return true
}

// decode decodes one document to JSON-shaped values; strict reports
// duplicate keys.
func decode(doc document, strict bool) (any, error) {
	j := doc.raw
	if !doc.json {
		var err error
		if strict {
			j, err = yaml.YAMLToJSONStrict(doc.raw)
		} else {
			j, err = yaml.YAMLToJSON(doc.raw)
		}
		if err != nil {
			return nil, fmt.Errorf("invalid YAML: %s", CleanYAMLError(err))
		}
	}
	var v any
	if strict {
		errs, err := sigsjson.UnmarshalStrict(j, &v, sigsjson.DisallowDuplicateFields)
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		if len(errs) > 0 {
			return nil, fmt.Errorf("invalid JSON: %w", errors.Join(errs...))
		}
		return v, nil
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return v, nil
}

// CleanYAMLError puts a go-yaml error on one line without its "yaml: "
// prefix. Its line numbers count from the start of the document.
func CleanYAMLError(err error) string {
	var parts []string
	for line := range strings.Lines(err.Error()) {
		line = strings.TrimSpace(strings.TrimPrefix(line, "yaml: "))
		if line != "" && line != "unmarshal errors:" {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, "; ")
}

// Group is the API group of Persona and PromptLayer.
var Group = v1alpha1.GroupVersion.Group

// APIVersion is the apiVersion of Persona and PromptLayer.
var APIVersion = v1alpha1.GroupVersion.String()

func (s *Set) addDocument(o Origin, doc document) {
	// Strictly first: a duplicate key, which the API server rejects, must not
	// be silently resolved in a kind we read. Only when that fails is the
	// document decoded again, leniently, to tell whether it is such a kind.
	v, strictErr := decode(doc, true)
	if strictErr != nil {
		var err error
		if v, err = decode(doc, false); err != nil {
			s.problem(o, "", "", err.Error())
			return
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		// Not an object (null, a scalar or a list): not a Kubernetes
		// manifest, like any other kind we do not read.
		return
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	ours := group == Group
	if !ours && (apiVersion != "v1" || !coreKinds[kind] && kind != "List" && kind != "ConfigMapList" && kind != "NamespaceList") {
		return
	}
	if strictErr != nil {
		s.problem(o, "", "", strictErr.Error())
		return
	}
	s.addObject(o, obj, true)
}

// addObject keeps one object, or the items of a list.
func (s *Set) addObject(o Origin, obj map[string]any, top bool) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group := ""
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	if top && strings.HasSuffix(kind, "List") {
		items, ok := obj["items"].([]any)
		if _, present := obj["items"]; present && !ok && obj["items"] != nil {
			s.problem(o, "", "items", "must be a list")
			return
		}
		if group == Group && !ourKinds[strings.TrimSuffix(kind, "List")] {
			s.problem(o, "", "kind", unknownKind(kind))
			return
		}
		for i, item := range items {
			itemOrigin := o
			itemOrigin.Item = i + 1
			m, ok := item.(map[string]any)
			if !ok {
				s.problem(itemOrigin, "", "", "a list item must be an object")
				continue
			}
			s.addObject(itemOrigin, m, false)
		}
		return
	}
	switch {
	case group == Group:
		if apiVersion != APIVersion {
			s.problem(o, "", "apiVersion", fmt.Sprintf("Unsupported value: %q: supported values: %q", apiVersion, APIVersion))
			return
		}
		if !ourKinds[kind] {
			s.problem(o, "", "kind", unknownKind(kind))
			return
		}
	case apiVersion == "v1" && coreKinds[kind]:
	default:
		return
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if clusterScoped[kind] {
		ns = ""
	} else {
		ns = cmp.Or(ns, s.ns)
	}
	object := &Object{Origin: o, Kind: kind, Name: name, Namespace: ns, Raw: obj}
	s.objects = append(s.objects, object)
	if name == "" {
		return
	}
	k := key{kind, object.Namespace, name}
	if first, dup := s.index[k]; dup {
		s.problem(o, object.Ref(), field.NewPath("metadata", "name").String(),
			fmt.Sprintf("Duplicate value: %q: %s %s/%s is also defined at %s", name, kind, object.Namespace, name, first.Origin))
		return
	}
	s.index[k] = object
}

// The kinds a Set keeps: this API's, and the core kinds a render reads.
var (
	ourKinds      = map[string]bool{v1alpha1.PersonaKind: true, v1alpha1.PromptLayerKind: true, v1alpha1.ClusterPromptLayerKind: true, v1alpha1.PromptPlatformKind: true}
	coreKinds     = map[string]bool{v1alpha1.ConfigMapKind: true, v1alpha1.NamespaceKind: true}
	clusterScoped = map[string]bool{v1alpha1.ClusterPromptLayerKind: true, v1alpha1.PromptPlatformKind: true, v1alpha1.NamespaceKind: true}
)

func unknownKind(kind string) string {
	return fmt.Sprintf("Unsupported value: %q: %s has the kinds %q, %q, %q and %q", kind, APIVersion,
		v1alpha1.PersonaKind, v1alpha1.PromptLayerKind, v1alpha1.ClusterPromptLayerKind, v1alpha1.PromptPlatformKind)
}

// AddFromCluster keeps objects read from a cluster rather than from a
// file: problems name them by ClusterName and their place in objs. They
// are no documents of the manifests (Documents does not count them).
func (s *Set) AddFromCluster(objs []map[string]any) {
	s.seq++
	for i, obj := range objs {
		s.addObject(Origin{File: ClusterName, Doc: i + 1, seq: s.seq}, obj, false)
	}
}

// FromCluster reports whether o was read from a cluster (AddFromCluster).
func (o *Object) FromCluster() bool { return o.Origin.File == ClusterName }

// Objects returns every kept object in the order read, duplicates included.
func (s *Set) Objects() []*Object { return s.objects }

// Personas returns the Personas that lookups find (the first of duplicates),
// sorted by namespace and name.
func (s *Set) Personas() []*Object { return s.Sorted(v1alpha1.PersonaKind) }

// Sorted returns the objects of kind that lookups find (the first of
// duplicates), sorted by namespace and name.
func (s *Set) Sorted(kind string) []*Object {
	var out []*Object
	for k, o := range s.index {
		if k.kind == kind {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *Object) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Find returns the object of a kind, namespace and name; nil when absent.
func (s *Set) Find(kind, namespace, name string) *Object {
	return s.index[key{kind, namespace, name}]
}

// Indexed reports whether o is the object lookups find under its key (the
// first of duplicates).
func (s *Set) Indexed(o *Object) bool {
	return o.Name != "" && s.index[key{o.Kind, o.Namespace, o.Name}] == o
}
