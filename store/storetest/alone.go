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
	won, busy := get2(s.ExecutionsMarkRunningAlone(ctx, life("n1"), []int64{a1.ID, a2.ID, b1.ID, other.ID}, nil, nil, 100))
	sameIDs(t, "first of each job wins", won.ok(t), []int64{a1.ID, b1.ID})
	sameIDs(t, "second fire of a job waits", busy, []int64{a2.ID})

	// n1 runs j1: n2 may not start it, n1 may start its next one (its own tracker's call).
	won, busy = get2(s.ExecutionsMarkRunningAlone(ctx, life("n2"), []int64{other.ID}, nil, nil, 300))
	equal(t, "started beside another node's run", len(won.ok(t)), 0)
	sameIDs(t, "busy beside another node's run", busy, []int64{other.ID})
	equal(t, "still acquired", get(s.ExecutionGet(ctx, other.ID)).ok(t).State, store.ExecAcquired)
	// Unless the job's runs count whoever holds them (a remote job's): then n1's own run
	// holds its next fire back too, under the at_most count as well.
	for _, limits := range []map[int64]int{nil, {j1.ID: 1}} {
		won, busy = get2(s.ExecutionsMarkRunningAlone(ctx, life("n1"), []int64{a2.ID}, limits, map[int64]bool{j1.ID: true}, 200))
		equal(t, fmt.Sprintf("started beside the node's own run counted (limits %v)", limits), len(won.ok(t)), 0)
		sameIDs(t, "busy beside the node's own run counted", busy, []int64{a2.ID})
	}
	won, _ = get2(s.ExecutionsMarkRunningAlone(ctx, life("n1"), []int64{a2.ID}, map[int64]int{j1.ID: 2}, map[int64]bool{j1.ID: true}, 200))
	sameIDs(t, "at_most 2 beside the node's own run counted", won.ok(t), []int64{a2.ID})
	get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: a2.ID, State: store.ExecSucceeded, FinishedAt: 210}})).ok(t)
	a2 = acquired("n1", j1.ID, 220)
	won, _ = get2(s.ExecutionsMarkRunningAlone(ctx, life("n1"), []int64{a2.ID}, nil, nil, 200))
	sameIDs(t, "the node's own run does not count", won.ok(t), []int64{a2.ID})

	// Once n1's runs of j1 end, n2 starts.
	get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: a1.ID, State: store.ExecSucceeded, FinishedAt: 250},
		{ID: a2.ID, State: store.ExecSucceeded, FinishedAt: 250}})).ok(t)
	won, busy = get2(s.ExecutionsMarkRunningAlone(ctx, life("n2"), []int64{other.ID}, nil, nil, 300))
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
			won, _, err := s.ExecutionsMarkRunningAlone(ctx, life(fmt.Sprintf("r%d", i)), []int64{x.ID}, nil, nil, 1000)
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

// testMarkRunningLimited checks the at_most count of ExecutionsMarkRunningAlone: of nodes
// racing for fires of one job with limit 2, two start; the runs of other nodes count
// against the limit, the claimer's own do not (it passes what it has left).
func testMarkRunningLimited(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "limited")
	limits := map[int64]int{j.ID: 2}
	life := func(node string) store.Owner { return store.Owner{Node: node, Incarnation: "1"} }
	acquired := func(node string, at int64) *store.Execution {
		x := &store.Execution{JobID: j.ID, TriggerID: j.ID, ScheduledAt: at, Cause: store.CauseSchedule, State: store.ExecAcquired,
			Node: node, Incarnation: "1"}
		get(s.ExecutionsInsert(ctx, []*store.Execution{x})).ok(t)
		return x
	}
	var xs []*store.Execution
	for i := range 6 {
		xs = append(xs, acquired(fmt.Sprintf("r%d", i), int64(1000+i)))
	}
	var mu sync.Mutex
	var started, waiting []int64
	var wg sync.WaitGroup
	for i, x := range xs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, busy, err := s.ExecutionsMarkRunningAlone(ctx, life(fmt.Sprintf("r%d", i)), []int64{x.ID}, limits, nil, 1000)
			if err != nil {
				t.Errorf("racing claim: %v", err)
			}
			mu.Lock()
			started, waiting = append(started, won...), append(waiting, busy...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	equal(t, "racing nodes that started", len(started), 2)
	equal(t, "racing nodes left busy", len(waiting), 4)

	// Another node's runs count, the claimer's own do not (its limit is what it has left).
	ownerOf := func(id int64) string { return get(s.ExecutionGet(ctx, id)).ok(t).Node }
	mine := ownerOf(started[0])
	if ownerOf(started[1]) == mine {
		t.Fatalf("both racing winners are %s", mine)
	}
	own := acquired(mine, 2000)
	won, busy := get2(s.ExecutionsMarkRunningAlone(ctx, life(mine), []int64{own.ID}, map[int64]int{j.ID: 1}, nil, 2000))
	equal(t, "started beside another node's run with room 1", len(won.ok(t)), 0)
	sameIDs(t, "busy beside another node's run", busy, []int64{own.ID})
	won, busy = get2(s.ExecutionsMarkRunningAlone(ctx, life(mine), []int64{own.ID}, map[int64]int{j.ID: 2}, nil, 2000))
	sameIDs(t, "started with room 2 beside one other run", won.ok(t), []int64{own.ID})
	equal(t, "busy with room", len(busy), 0)

	// Two fires of one call: only the room there is.
	get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: started[0], State: store.ExecSucceeded, FinishedAt: 2002},
		{ID: started[1], State: store.ExecSucceeded, FinishedAt: 2002}, {ID: own.ID, State: store.ExecSucceeded, FinishedAt: 2002}})).ok(t)
	a, b, c := acquired("r9", 3000), acquired("r9", 3001), acquired("r9", 3002)
	won, busy = get2(s.ExecutionsMarkRunningAlone(ctx, life("r9"), []int64{a.ID, b.ID, c.ID}, limits, nil, 3002))
	sameIDs(t, "one call fills the room", won.ok(t), []int64{a.ID, b.ID})
	sameIDs(t, "one call past the room", busy, []int64{c.ID})
}
