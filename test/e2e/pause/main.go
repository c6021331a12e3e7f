// Command pause is the pod sandbox ("pause") image of the e2e suite's node:
// containerd needs a sandbox image, and only the Go module proxy is reachable,
// so this stands in for registry.k8s.io/pause. It holds the pod's namespaces
// open until the runtime stops it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// As PID 1 of its namespace it would ignore SIGTERM without a handler.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
