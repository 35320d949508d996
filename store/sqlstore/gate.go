package sqlstore

import (
	"context"
	"slices"
	"sync"

	"github.com/sundial-scheduler/sundial/store"
)

// gate orders the callers of a SQLite store's one connection. database/sql hands a freed
// connection to a random waiter, so under overload the node's heartbeat drew lots against
// back-to-back acquisition rounds and the claims that start fires, and lost for seconds
// (measured: heartbeat writes waiting 2–9.5 s, the fence lapsing, whole seconds firing
// nothing while claims waited 2–3 s behind acquisitions). Through the gate the urgent go
// first (they wait for at most the transaction in progress), then the normal in their order,
// and the deferred (acquisition rounds) when no normal one waits — or after deferAfter
// normal ones went ahead of one, so that a steady stream of other work cannot stop
// acquisition.
//
// A caller holds the gate for one statement outside a transaction, or from Begin to Commit
// or Rollback. A statement's rows may still hold the connection for a moment after the gate
// has passed on; the next holder then waits for it in the pool, alone.
type gate struct {
	mu     sync.Mutex
	busy   bool
	queues [3][]chan struct{} // by priority, index priority - store.PriorityDeferred
	// passed counts the normal callers served while a deferred one waited.
	passed int
	watch  func(store.Priority) // WithQueueWatch; nil without
}

// deferAfter is how many normal callers may go ahead of a waiting deferred one.
const deferAfter = 4

func clampPriority(p store.Priority) store.Priority {
	return min(max(p, store.PriorityDeferred), store.PriorityUrgent)
}

// enter waits for the gate, or until ctx ends (an error, and the gate is not held).
func (g *gate) enter(ctx context.Context, p store.Priority) error {
	p = clampPriority(p)
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	q := &g.queues[p-store.PriorityDeferred]
	*q = append(*q, turn)
	watch := g.watch
	g.mu.Unlock()
	if watch != nil {
		watch(p)
	}
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if i := slices.Index(*q, turn); i >= 0 {
		*q = slices.Delete(*q, i, i+1)
		g.mu.Unlock()
		return ctx.Err()
	}
	g.mu.Unlock()
	g.leave() // it was our turn meanwhile: pass it on
	return ctx.Err()
}

// leave hands the gate to the next caller, or frees it.
func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	deferred, normal, urgent := &g.queues[0], &g.queues[1], &g.queues[2]
	var q *[]chan struct{}
	switch {
	case len(*urgent) > 0:
		q = urgent
	case len(*deferred) > 0 && (len(*normal) == 0 || g.passed >= deferAfter):
		q, g.passed = deferred, 0
	case len(*normal) > 0:
		q = normal
		if len(*deferred) > 0 {
			g.passed++
		}
	default:
		g.busy = false
		return
	}
	turn := (*q)[0]
	*q = (*q)[1:]
	close(turn)
}
