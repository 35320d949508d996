package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// testMarkRunningAlone checks that a job's fires never run on two nodes at once through
// ExecutionsMarkRunningAlone, and that a node's own runs do not hold its next fire back.
func testMarkRunningAlone(t *testing.T, s store.Store) {
	ctx := context.Background()
	j1, j2 := newJob(t, s, "g", "alone1"), newJob(t, s, "g", "alone2")
	life := func(node string) store.Owner { return store.Owner{Node: node, Incarnation: "1"} }
	acquired := func(node string, job int64, at int64) *store.Execution {
		x := &store.Execution{JobID: job, TriggerID: job, ScheduledAt: at, Cause: store.CauseSchedule, State: store.ExecAcquired,
			Node: node, Incarnation: "1"}
		get(s.ExecutionsInsert(ctx, []*store.Execution{x})).ok(t)
		return x
	}
	a1, a2, b1 := acquired("n1", j1.ID, 100), acquired("n1", j1.ID, 200), acquired("n1", j2.ID, 100)
	other := acquired("n2", j1.ID, 300)
	won, busy := get2(s.ExecutionsMarkRunningAlone(ctx, life("n1"), []int64{a1.ID, a2.ID, b1.ID, other.ID}, 100))
	sameIDs(t, "first of each job wins", won.ok(t), []int64{a1.ID, b1.ID})
	sameIDs(t, "second fire of a job waits", busy, []int64{a2.ID})

	// n1 runs j1: n2 may not start it, n1 may start its next one (its own tracker's call).
	won, busy = get2(s.ExecutionsMarkRunningAlone(ctx, life("n2"), []int64{other.ID}, 300))
	equal(t, "started beside another node's run", len(won.ok(t)), 0)
	sameIDs(t, "busy beside another node's run", busy, []int64{other.ID})
	equal(t, "still acquired", get(s.ExecutionGet(ctx, other.ID)).ok(t).State, store.ExecAcquired)
	won, _ = get2(s.ExecutionsMarkRunningAlone(ctx, life("n1"), []int64{a2.ID}, 200))
	sameIDs(t, "the node's own run does not count", won.ok(t), []int64{a2.ID})

	// Once n1's runs of j1 end, n2 starts.
	get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: a1.ID, State: store.ExecSucceeded, FinishedAt: 250},
		{ID: a2.ID, State: store.ExecSucceeded, FinishedAt: 250}})).ok(t)
	won, busy = get2(s.ExecutionsMarkRunningAlone(ctx, life("n2"), []int64{other.ID}, 300))
	sameIDs(t, "started after the other node's run", won.ok(t), []int64{other.ID})
	equal(t, "busy after the other node's run", len(busy), 0)

	// Nodes racing for fires of one idle job: exactly one starts.
	var xs []*store.Execution
	for i := range 4 {
		xs = append(xs, acquired(fmt.Sprintf("r%d", i), j2.ID, int64(1000+i)))
	}
	get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: b1.ID, State: store.ExecSucceeded, FinishedAt: 250}})).ok(t)
	var mu sync.Mutex
	var started []int64
	var wg sync.WaitGroup
	for i, x := range xs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, _, err := s.ExecutionsMarkRunningAlone(ctx, life(fmt.Sprintf("r%d", i)), []int64{x.ID}, 1000)
			if err != nil {
				t.Errorf("racing claim: %v", err)
			}
			mu.Lock()
			started = append(started, won...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	equal(t, "racing nodes that started", len(started), 1)
}

// get2 is get for calls that return two slices and an error.
func get2(a, b []int64, err error) (result[[]int64], []int64) { return result[[]int64]{a, err}, b }
