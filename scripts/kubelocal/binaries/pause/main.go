// The pod sandbox's process (what Kubernetes' pause image runs): it holds the pod's
// namespaces, reaps the orphans that land on it as PID 1, and exits on SIGINT or SIGTERM.
// Built here because no image registry is reachable.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for got := range signals {
		if got != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
