package cli

import (
	"encoding/json"
	"io"
)

// writeJSON prints v as indented JSON, as kubectl -o json does.
func writeJSON(w io.Writer, v any) error {
	raw, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(raw, '\n'))
	return err
}
