package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// overlapRun is what one fire did, in offsets from t0 (-1: never).
type overlapRun struct {
	state            store.ExecutionState
	started, stopped time.Duration // stopped: when its context was canceled
}

func (r overlapRun) String() string {
	return fmt.Sprintf("%s started %v canceled %v", r.state, r.started, r.stopped)
}

// TestOverlapPolicies fires a job at 1 s, 2 s and 3 s on a fake clock. The fires of 1 s and
// 2 s hold on until 3.5 s, even when their context is canceled (a slow cooperative stop); the
// fire of 3 s returns at once. Each policy's outcome is checked to the millisecond: when each
// fire started, when it was asked to stop, and how it ended. docs/policies.md draws these
// timelines.
func TestOverlapPolicies(t *testing.T) {
	const never = -1
	s := func(sec float64) time.Duration { return time.Duration(sec * float64(time.Second)) }
	ok, skipped, canceled := store.ExecSucceeded, store.ExecSkipped, store.ExecCanceled
	type step struct{ starts, stops, queued, completed int } // what to wait for after each fire
	for _, tc := range []struct {
		policy store.ConcurrencyPolicy
		max    int
		steps  [3]step // after the fires of 1 s, 2 s, 3 s
		after  step    // after the release at 3.5 s
		want   []overlapRun
	}{
		{store.ConcurrencyAllow, 0, [3]step{{1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 1}}, step{0, 0, 0, 2},
			[]overlapRun{{ok, s(1), never}, {ok, s(2), never}, {ok, s(3), never}}},
		{store.ConcurrencySkip, 0, [3]step{{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 1}}, step{0, 0, 0, 1},
			[]overlapRun{{ok, s(1), never}, {skipped, never, never}, {skipped, never, never}}},
		{store.ConcurrencyBufferAll, 0, [3]step{{1, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 1, 0}}, step{2, 0, 0, 3},
			[]overlapRun{{ok, s(1), never}, {ok, s(3.5), never}, {ok, s(3.5), never}}},
		{store.ConcurrencyBufferOne, 0, [3]step{{1, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 1, 1}}, step{1, 0, 0, 2},
			[]overlapRun{{ok, s(1), never}, {skipped, never, never}, {ok, s(3.5), never}}},
		{store.ConcurrencyCancel, 0, [3]step{{1, 0, 0, 0}, {0, 1, 1, 0}, {0, 0, 1, 1}}, step{1, 0, 0, 2},
			[]overlapRun{{canceled, s(1), s(2)}, {skipped, never, never}, {ok, s(3.5), never}}},
		{store.ConcurrencyTerminate, 0, [3]step{{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 1, 0, 1}}, step{0, 0, 0, 2},
			[]overlapRun{{canceled, s(1), s(2)}, {canceled, s(2), s(3)}, {ok, s(3), never}}},
		{store.ConcurrencyAtMost, 2, [3]step{{1, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 1, 0}}, step{1, 0, 0, 3},
			[]overlapRun{{ok, s(1), never}, {ok, s(2), never}, {ok, s(3.5), never}}},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			eachDialect(t, func(t *testing.T, dialect string) {
				release := make(chan struct{})
				var mu sync.Mutex
				started, stopped := map[int64]time.Duration{}, map[int64]time.Duration{}
				// began and stops tell the test the handler has read the clock, before it moves on.
				began, stops := make(chan int64, 8), make(chan int64, 8)
				var n *fakeNode
				n = newFakeNode(t, dialect, func(ctx context.Context, f *Fire) Result {
					at := f.Execution.ScheduledAt
					mu.Lock()
					started[at] = n.clk.Now().Sub(t0)
					mu.Unlock()
					began <- at
					if at == ms(t0.Add(3*time.Second)) {
						return Result{}
					}
					select {
					case <-ctx.Done():
						mu.Lock()
						stopped[at] = n.clk.Now().Sub(t0)
						mu.Unlock()
						stops <- at
						<-release // a slow stop: it ends only at the release
					case <-release:
					}
					return Result{}
				})
				job := insertJob(t, n.st, "job", func(j *store.Job) { j.Concurrency, j.MaxConcurrent = tc.policy, tc.max })
				insertTrigger(t, n.st, job, "thrice", schedule.Simple{Interval: time.Second, RepeatCount: 2}, t0.Add(time.Second), nil)
				n.start()
				wait := func(when string, st step) {
					t.Helper()
					waitFor(t, "starts "+when, began, st.starts)
					waitFor(t, "stops "+when, stops, st.stops)
					waitFor(t, "queued fires "+when, n.e.signals.queued, st.queued)
					n.completed(st.completed)
				}
				for i, st := range tc.steps {
					n.advance(time.Second)
					wait(fmt.Sprintf("after the fire of %d s", i+1), st)
				}
				n.advance(500 * time.Millisecond)
				close(release)
				wait("after the release", tc.after)

				var got []overlapRun
				for _, ex := range n.executions(job) {
					r := overlapRun{state: ex.State, started: never, stopped: never}
					mu.Lock()
					if d, ok := started[ex.ScheduledAt]; ok {
						r.started = d
					}
					if d, ok := stopped[ex.ScheduledAt]; ok {
						r.stopped = d
					}
					mu.Unlock()
					got = append(got, r)
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("fires:\n got %v\nwant %v", got, tc.want)
				}
			})
		})
	}
}
