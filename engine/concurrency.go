package engine

import (
	"context"
	"sync"

	"github.com/sundial-scheduler/sundial/store"
)

type admission int

const (
	admitRun admission = iota
	admitSkip
	admitQueued
)

// concurrency applies jobs' concurrency policies to the fires of this node: serial fires
// wait in a per-job queue (still acquired in the store, so a crash hands them to another
// node), discard skips a fire while one runs, replace cancels the running fire.
type concurrency struct {
	mu      sync.Mutex
	active  map[int64]map[int64]context.CancelCauseFunc // job → execution → cancel (nil until started)
	waiting map[int64][]*pendingFire                    // serial jobs' queued fires
}

func newConcurrency() *concurrency {
	return &concurrency{active: map[int64]map[int64]context.CancelCauseFunc{}, waiting: map[int64][]*pendingFire{}}
}

// admit decides what happens to a due fire and, when it may run, counts it as active.
func (c *concurrency) admit(f *Fire) admission {
	c.mu.Lock()
	defer c.mu.Unlock()
	job, id := f.Job.ID, f.Execution.ID
	active := c.active[job]
	if len(active) > 0 {
		switch f.Job.Concurrency {
		case store.ConcurrencySerial:
			c.waiting[job] = append(c.waiting[job], &pendingFire{exec: f.Execution, priority: 5})
			return admitQueued
		case store.ConcurrencyDiscard:
			return admitSkip
		case store.ConcurrencyReplace:
			for _, cancel := range active {
				if cancel != nil {
					cancel(errReplaced)
				}
			}
		}
	}
	if active == nil {
		active = map[int64]context.CancelCauseFunc{}
		c.active[job] = active
	}
	active[id] = nil
	return admitRun
}

// running records how to cancel a started fire (for replace).
func (c *concurrency) running(f *Fire, cancel context.CancelCauseFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if active := c.active[f.Job.ID]; active != nil {
		if _, ok := active[f.Execution.ID]; ok {
			active[f.Execution.ID] = cancel
		}
	}
}

// done forgets a finished (or never started) fire and returns the job's next queued fire.
func (c *concurrency) done(f *Fire) *pendingFire {
	c.mu.Lock()
	defer c.mu.Unlock()
	job := f.Job.ID
	if active := c.active[job]; active != nil {
		delete(active, f.Execution.ID)
		if len(active) > 0 {
			return nil
		}
		delete(c.active, job)
	}
	q := c.waiting[job]
	if len(q) == 0 {
		return nil
	}
	next := q[0]
	if len(q) == 1 {
		delete(c.waiting, job)
	} else {
		c.waiting[job] = q[1:]
	}
	return next
}

// appendDone is done, appending the job's next queued fire (if any) to next: that fire must
// be started, or it stays acquired by this node until it stops.
func (c *concurrency) appendDone(next []*pendingFire, f *Fire) []*pendingFire {
	if p := c.done(f); p != nil {
		return append(next, p)
	}
	return next
}

// dropQueued forgets the queued fires when the node stops; they stay acquired in the store.
func (c *concurrency) dropQueued() {
	c.mu.Lock()
	c.waiting = map[int64][]*pendingFire{}
	c.mu.Unlock()
}
