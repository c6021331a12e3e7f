//go:build linux

package cli

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The seals that make an in-memory file read-only for good: no write, no
// size change, and no seal removed.
const promptSeals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// sealedFile puts content in an in-memory file (memfd) sealed against every
// change, left open across exec, and returns the path the harness opens it
// by, /proc/PID/fd/N of this process: exec keeps the PID and the
// descriptor, and the path holds for the harness's children too (Codex's
// Node wrapper runs the harness in a child, where fd N is another file).
// No other process can write it, where a file under HOME can be swapped by
// any process that shares the directory.
func sealedFile(name, content string) (string, error) {
	// Without MFD_CLOEXEC: the harness must inherit it.
	fd, err := unix.MemfdCreate(Name+":"+name, unix.MFD_ALLOW_SEALING)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
			return "", fmt.Errorf("%w: memfd_create: %v", errNoSealedFiles, err)
		}
		return "", fmt.Errorf("create an in-memory file for %s: %w", name, err)
	}
	for rest := []byte(content); len(rest) > 0; {
		n, err := unix.Write(fd, rest)
		if err != nil {
			_ = unix.Close(fd)
			return "", fmt.Errorf("write the in-memory file for %s: %w", name, err)
		}
		rest = rest[n:]
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, promptSeals); err != nil {
		_ = unix.Close(fd)
		return "", fmt.Errorf("seal the in-memory file for %s: %w", name, err)
	}
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd), nil
}
