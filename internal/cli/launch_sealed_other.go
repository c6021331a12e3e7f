//go:build !linux

package cli

// sealedFile: in-memory files are Linux's; elsewhere launch writes files.
func sealedFile(string, string) (string, error) { return "", errNoSealedFiles }
