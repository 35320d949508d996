// Package maprun is the loop that runs map/reduce sub-tasks, shared by the in-process runner
// (package sundial, over the store) and the executor SDK's (package executor, over the
// executor calls): claim while workers are free, run each claimed task on a worker, write the
// outcomes in batches, and reduce the maps that are ready.
package maprun

import (
	"context"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
)

// Runner runs tasks of type T (outcomes R) and reduces maps of type M.
type Runner[T, R, M any] struct {
	Workers      int
	Batch        int
	PollInterval time.Duration
	Clock        clock.Clock
	// Claim takes up to n tasks and, when its tasks come back short of n, ready maps; ok false
	// means it cannot claim now (the runner waits a poll interval).
	Claim func(ctx context.Context, n int) (tasks []T, maps []M, ok bool)
	// Run runs one task; false: cut short by the runner's stop, not to be written.
	Run func(ctx context.Context, t T) (R, bool)
	// Write records a batch of outcomes (ctx is not canceled by the stop).
	Write func(ctx context.Context, rs []R)
	// Reduce reduces one ready map.
	Reduce func(ctx context.Context, m M)

	wakeCh  chan struct{}
	freed   chan struct{}
	results chan R
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

// Start runs the loop and the writer until Stop.
func (r *Runner[T, R, M]) Start(parent context.Context) {
	if r.wakeCh == nil {
		r.wakeCh = make(chan struct{}, 1)
	}
	r.freed = make(chan struct{}, 1)
	r.results = make(chan R, r.Workers)
	ctx, cancel := context.WithCancel(parent)
	r.cancel = cancel
	r.done.Add(2)
	go r.loop(ctx)
	go r.writer(context.WithoutCancel(ctx))
}

// Wake makes an idle runner look for work now. It may be called before Start and on a nil
// runner.
func (r *Runner[T, R, M]) Wake() {
	if r == nil || r.wakeCh == nil {
		return
	}
	select {
	case r.wakeCh <- struct{}{}:
	default:
	}
}

// Init prepares Wake before Start (Map may run before the runner starts).
func (r *Runner[T, R, M]) Init() { r.wakeCh = make(chan struct{}, 1) }

// Stop cancels the tasks in flight, waits for them, writes the outcomes of those that ended
// on their own, and returns; it reports whether the runner was running.
func (r *Runner[T, R, M]) Stop() bool {
	if r.cancel == nil {
		return false
	}
	r.cancel()
	r.done.Wait()
	r.cancel = nil
	return true
}

// loop claims while a quarter of the workers are free (not one by one), and sleeps a poll
// interval, or until woken, when there was nothing to claim.
func (r *Runner[T, R, M]) loop(ctx context.Context) {
	defer r.done.Done()
	slots := make(chan struct{}, r.Workers)
	for ctx.Err() == nil {
		free := r.Workers - len(slots)
		if free < max(r.Workers/4, 1) {
			select {
			case <-ctx.Done():
			case <-r.freed:
			}
			continue
		}
		tasks, maps, ok := r.Claim(ctx, min(free, r.Batch))
		for _, t := range tasks {
			slots <- struct{}{}
			go func() {
				defer func() {
					<-slots
					select {
					case r.freed <- struct{}{}:
					default:
					}
				}()
				if res, ok := r.Run(ctx, t); ok {
					r.results <- res
				}
			}()
		}
		for _, m := range maps {
			r.Reduce(ctx, m)
		}
		if !ok || len(tasks) == 0 && len(maps) == 0 {
			r.sleep(ctx)
		}
	}
	// Wait for the tasks in flight; the writer writes what they sent, then ends.
	for range r.Workers {
		slots <- struct{}{}
	}
	close(r.results)
}

func (r *Runner[T, R, M]) sleep(ctx context.Context) {
	t := r.Clock.NewTimer(r.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-r.wakeCh:
	case <-t.C():
	}
}

// writer writes outcomes in batches: what finished while the last write ran goes in the next.
func (r *Runner[T, R, M]) writer(ctx context.Context) {
	defer r.done.Done()
	batch := make([]R, 0, r.Batch)
	for {
		res, ok := <-r.results
		if !ok {
			return
		}
		batch = append(batch[:0], res)
	gather:
		for len(batch) < r.Batch {
			select {
			case res, ok := <-r.results:
				if !ok {
					break gather
				}
				batch = append(batch, res)
			default:
				break gather
			}
		}
		r.Write(ctx, batch)
		r.Wake() // the last outcomes may have made a map ready
	}
}
