package manifest

// AddDocument reads one document that came from document doc of file, such
// as a resource of a kustomize build whose origin is known.
func (s *Set) AddDocument(file string, doc int, raw []byte) {
	s.seq++
	docs, err := splitDocuments(raw)
	for _, d := range docs {
		s.Documents++
		s.addDocument(Origin{File: file, Doc: doc, seq: s.seq}, d)
	}
	if err != nil {
		s.problem(Origin{File: file, Doc: doc, seq: s.seq}, "", "", err.Error())
	}
}

// CountYAMLDocuments counts the non-empty documents of a file read as YAML
// only, for a file that starts with "{" and is not JSON: a YAML flow
// mapping.
func CountYAMLDocuments(raw []byte) (int, error) {
	docs, err := splitYAML(raw)
	return len(docs), err
}
