package rollouts

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the controller when the test binary
// dies, e.g. of go test's timeout, which runs no cleanup.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
