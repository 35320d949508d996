// Package groupcommit writes many callers' requests in shared batches: a group commit with
// no goroutine of its own. A caller queues its request; if no write is in flight it writes
// the queue's head (its own request first), and then hands the writing to the first waiter
// still queued, so no caller waits longer than the batches ahead of it. Requests queued while
// a batch is written go in the next one, and a lone request is written at once, with no
// lingering: batches grow with the load by themselves. The remote path's dispatch records
// and the executors' results are written this way.
package groupcommit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Batcher writes requests of type Req in batches with Write, which returns one outcome per
// request, in order.
type Batcher[Req, Res any] struct {
	// Write writes a batch. Its context is the writing caller's without its cancellation
	// (the batch is every queued caller's), bounded by Timeout.
	Write func(ctx context.Context, batch []Req) ([]Res, error)
	// Max bounds a batch's requests. Default 500.
	Max int
	// Timeout bounds one batch's write. Default 30 s.
	Timeout time.Duration

	mu      sync.Mutex
	queued  []*request[Req, Res]
	writing bool
	// queuedHook and leftHook, set by tests, are told the queue's length after each request
	// is queued, and when a waiter leaves.
	queuedHook func(n int)
	leftHook   func()
}

type request[Req, Res any] struct {
	req  Req
	done chan struct{} // closed once written (res, err set)
	res  Res
	err  error
	// lead is closed when the writing is handed to this request's waiter; handed and
	// abandoned (its waiter left, its context ended) are guarded by Batcher.mu.
	lead      chan struct{}
	handed    bool
	abandoned bool
}

// Do writes req with the others queued and returns its outcome. When ctx ends first it
// returns ctx.Err(), and the request may still be written with its batch.
func (b *Batcher[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	q := &request[Req, Res]{req: req, done: make(chan struct{}), lead: make(chan struct{})}
	b.mu.Lock()
	b.queued = append(b.queued, q)
	lead := !b.writing
	b.writing = true
	if b.queuedHook != nil {
		b.queuedHook(len(b.queued))
	}
	b.mu.Unlock()
	if lead {
		b.writeUntil(ctx, q)
	}
	select {
	case <-q.done:
	case <-q.lead:
		b.writeUntil(ctx, q)
	case <-ctx.Done():
		b.mu.Lock()
		q.abandoned = true
		handed := q.handed
		if b.leftHook != nil {
			b.leftHook()
		}
		b.mu.Unlock()
		if !handed {
			var zero Res
			return zero, ctx.Err()
		}
		b.writeUntil(ctx, q) // the writing was handed over meanwhile: the others wait on it
	}
	<-q.done
	return q.res, q.err
}

// writeUntil writes the queue's batches until me is written, then hands the writing to the
// first waiter still queued; requests whose waiters left are written too, and the writing
// ends with an empty queue.
func (b *Batcher[Req, Res]) writeUntil(ctx context.Context, me *request[Req, Res]) {
	ctx = context.WithoutCancel(ctx)
	maxBatch := b.Max
	if maxBatch <= 0 {
		maxBatch = 500
	}
	for {
		b.mu.Lock()
		if closed(me.done) {
			for _, q := range b.queued {
				if !q.abandoned {
					q.handed = true
					close(q.lead)
					b.mu.Unlock()
					return
				}
			}
			if len(b.queued) == 0 {
				b.queued, b.writing = nil, false
				b.mu.Unlock()
				return
			}
		}
		batch := b.queued[:min(len(b.queued), maxBatch)]
		b.queued = b.queued[len(batch):]
		b.mu.Unlock()
		b.writeBatch(ctx, batch)
	}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// writeBatch writes batch and gives each request its outcome.
func (b *Batcher[Req, Res]) writeBatch(ctx context.Context, batch []*request[Req, Res]) {
	reqs := make([]Req, len(batch))
	for i, q := range batch {
		reqs[i] = q.req
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	res, err := b.write(wctx, reqs)
	cancel()
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("groupcommit: %d outcomes for a batch of %d", len(res), len(batch))
	}
	for i, q := range batch {
		if err != nil {
			q.err = err
		} else {
			q.res = res[i]
		}
		close(q.done)
	}
}

// write calls Write, turning a panic into the batch's error: the callers (HTTP handlers,
// whose panics net/http recovers) must get an answer, and the Batcher must not stay marked
// as writing with nobody writing, which would strand every later request.
func (b *Batcher[Req, Res]) write(ctx context.Context, reqs []Req) (res []Res, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("groupcommit: the batch's write panicked: %v", r)
		}
	}()
	return b.Write(ctx, reqs)
}
