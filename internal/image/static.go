package image

import (
	"debug/elf"
	"fmt"
)

// RequireStatic refuses a binary that needs a dynamic loader or shared
// libraries: the images hold nothing beside it.
func RequireStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is linked dynamically (it names a program interpreter): build it with CGO_ENABLED=0", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("%s needs the shared libraries %v: build it with CGO_ENABLED=0", path, libs)
	}
	return nil
}
