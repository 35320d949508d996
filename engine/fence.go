package engine

import (
	"context"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/store"
)

// fence is a life's own knowledge that the cluster still counts it alive. A heartbeat that
// succeeded keeps the node's row fresh, by the database clock, until at least NodeTimeout
// after the beat was sent: before then no leader can declare the life dead. The life starts
// a handler only within that lease. Past it — the process was frozen (SIGSTOP, a long pause),
// or the database did not answer — the handler waits for the next heartbeat's verdict: alive,
// and it runs; declared dead, and the life is dropped without running it, since the leader
// has declared the run lost and may have fired it again.
type fence struct {
	mu      sync.Mutex
	until   time.Time
	renewed chan struct{} // closed and replaced at every renewal
}

func newFence() *fence { return &fence{renewed: make(chan struct{})} }

// renew extends the lease to until.
func (f *fence) renew(until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if until.After(f.until) {
		f.until = until
	}
	close(f.renewed)
	f.renewed = make(chan struct{})
}

// hold reports whether the life holds its lease now, waiting for a renewal when it has
// lapsed; it reports false when ctx ends first (the life was dropped, or the node stops).
func (f *fence) hold(ctx context.Context, clk clock.Clock) bool {
	for {
		f.mu.Lock()
		ok, renewed := clk.Now().Before(f.until), f.renewed
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-renewed:
		case <-ctx.Done():
			return false
		}
	}
}

// recoverEarlierLives recovers the work of the node's lives other than owner: those that
// died under the same node id and were never declared dead, because the node came back
// before its row went stale.
func (e *Engine) recoverEarlierLives(ctx context.Context, owner store.Owner) error {
	lives, err := e.store.ExecutionsOwners(ctx, owner.Node)
	if err != nil {
		return err
	}
	for _, o := range lives {
		if o == owner {
			continue
		}
		// The new life's first acquisition round comes next: no wake-up needed.
		if _, err := e.recoverLife(ctx, o, nil); err != nil {
			return err
		}
	}
	return nil
}
