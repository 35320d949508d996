package main

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// exits reports whether process pid ends within d (a zombie has ended), waiting on a pidfd,
// which the kernel makes readable when the process exits.
func exits(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true // gone and reaped already
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(time.Until(deadline).Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			t.Fatalf("poll pidfd of %d: %v", pid, err)
		}
		return n == 1
	}
}
