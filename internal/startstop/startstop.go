// Package startstop owns the lifecycle of Sundial's background services: Start returns once
// the service runs (a second Start does nothing), Stop cancels it and waits for it to end, is
// idempotent and may be called on a service never started. A service embeds Base and hands
// it its run function; run must return promptly once its context is canceled, which is what
// bounds Stop.
package startstop

import (
	"context"
	"sync"
)

// Base runs one goroutine per Start, until Stop.
type Base struct {
	mu     sync.Mutex // held through a stop, so a concurrent Stop also waits
	cancel context.CancelFunc
	done   chan struct{}
}

// StartFunc starts run on its own goroutine with a context canceled by Stop (not by ctx's
// cancellation: a service outlives the call that started it, but keeps its values). It
// reports false, and runs nothing, when the service runs already.
func (b *Base) StartFunc(ctx context.Context, run func(ctx context.Context)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done != nil {
		return false
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	b.cancel, b.done = cancel, done
	go func() {
		defer close(done)
		run(ctx)
	}()
	return true
}

// Running reports whether the service was started and not stopped since.
func (b *Base) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done != nil
}

// Stop cancels the running service and waits until its run function has returned.
func (b *Base) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		return
	}
	b.cancel()
	<-b.done
	b.cancel, b.done = nil, nil
}
