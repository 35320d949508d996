//go:build !linux

package main

import (
	"syscall"
	"testing"
	"time"
)

// exits reports whether process pid has ended. Without pidfds it can only look once: a
// process still exiting from a SIGKILL counts as alive.
func exits(t *testing.T, pid int, _ time.Duration) bool {
	t.Helper()
	return syscall.Kill(pid, 0) != nil
}
