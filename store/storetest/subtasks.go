package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// testSubtasks checks the map/reduce rows: a map is inserted in batches (more rows than one
// statement holds) and a repeated map inserts nothing twice; the limit refuses a map whole;
// claims never hand one sub-task to two owners; a result is accepted once, by the attempt and
// owner that claimed it; a failure with attempts left goes back to pending; a dead owner's
// sub-tasks and reduce are released; the map is ready to reduce only when every sub-task is
// terminal; and a running execution waiting for its map is not lost with its node.
func testSubtasks(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "mr")
	x := &store.Execution{JobID: j.ID, ScheduledAt: 5, Cause: store.CauseManual, State: store.ExecRunning, Node: "dead"}
	get(s.ExecutionsInsert(ctx, []*store.Execution{x})).ok(t)

	const n = 1234 // more than one statement's rows
	ts := make([]*store.Subtask, n)
	for i := range ts {
		ts[i] = &store.Subtask{Depth: 1, Seq: i, Payload: fmt.Sprintf(`{"i":%d}`, i), MaxAttempts: 2}
	}
	m := &store.SubtaskMap{ExecutionID: x.ID, JobID: j.ID, Handler: "h"}
	equal(t, "inserted", get(s.SubtasksMap(ctx, m, ts, 0)).ok(t), n)
	equal(t, "inserted again", get(s.SubtasksMap(ctx, m, ts[:10], 0)).ok(t), 0)
	more := []*store.Subtask{{Depth: 1, Seq: n, Payload: "{}"}, {Depth: 1, Seq: n + 1, Payload: "{}"}}
	_, err := s.SubtasksMap(ctx, m, more, n+1)
	wantErr(t, err, store.ErrLimit)
	equal(t, "total", get(s.SubtaskMapGet(ctx, x.ID)).ok(t).Total, int64(n))
	equal(t, "counts", get(s.SubtaskCounts(ctx, x.ID)).ok(t)[store.SubtaskPending], int64(n))

	// The waiting execution is not its dead node's to lose.
	equal(t, "lost", len(get(s.ExecutionsLoseRunning(ctx, own("dead"))).ok(t)), 0)
	equal(t, "no map ready", len(get(s.SubtaskMapsClaimReady(ctx, "a", []string{"h"}, 10)).ok(t)), 0)

	a := get(s.SubtasksClaim(ctx, "a", []string{"h"}, 1000)).ok(t)
	b := get(s.SubtasksClaim(ctx, "b", []string{"h", "other"}, 1000)).ok(t)
	equal(t, "claimed by a", len(a), 1000)
	equal(t, "claimed by b", len(b), n-1000)
	equal(t, "other handler claims none", len(get(s.SubtasksClaim(ctx, "c", []string{"other"}, 10)).ok(t)), 0)
	if a[0].State != store.SubtaskRunning || a[0].Attempt != 1 || a[0].Owner != "a" || a[0].Payload != `{"i":0}` {
		t.Fatalf("claimed: %+v", a[0])
	}
	equal(t, "owners", fmt.Sprint(get(s.SubtaskOwners(ctx, "")).ok(t)), "[a b]")
	equal(t, "owners by prefix", fmt.Sprint(get(s.SubtaskOwners(ctx, "b")).ok(t)), "[b]")
	equal(t, "a prefix is not a pattern", len(get(s.SubtaskOwners(ctx, "%")).ok(t)), 0)
	seen := map[int64]bool{}
	for _, st := range append(a, b...) {
		if seen[st.ID] {
			t.Fatalf("sub-task %d claimed twice", st.ID)
		}
		seen[st.ID] = true
	}

	// a's results: all but the first succeed; the first fails with an attempt left.
	rs := make([]store.SubtaskResult, len(a))
	for i, st := range a {
		rs[i] = store.SubtaskResult{ID: st.ID, Attempt: st.Attempt, Owner: "a", State: store.SubtaskSucceeded, Result: fmt.Sprint(i)}
	}
	rs[0].State, rs[0].Message = store.SubtaskFailed, "boom"
	equal(t, "accepted", len(get(s.SubtasksComplete(ctx, rs)).ok(t)), len(a))
	equal(t, "accepted twice", len(get(s.SubtasksComplete(ctx, rs)).ok(t)), 0)
	wrongOwner := store.SubtaskResult{ID: b[0].ID, Attempt: b[0].Attempt, Owner: "a", State: store.SubtaskSucceeded}
	equal(t, "result by another owner", len(get(s.SubtasksComplete(ctx, []store.SubtaskResult{wrongOwner})).ok(t)), 0)

	// b dies: its sub-tasks go back to pending; b's late result is refused.
	equal(t, "released", get(s.SubtasksRelease(ctx, []string{"b"})).ok(t), int64(n-1000))
	late := store.SubtaskResult{ID: b[0].ID, Attempt: b[0].Attempt, Owner: "b", State: store.SubtaskSucceeded}
	equal(t, "late result", len(get(s.SubtasksComplete(ctx, []store.SubtaskResult{late})).ok(t)), 0)
	c := get(s.SubtasksClaim(ctx, "c", []string{"h"}, 1000)).ok(t)
	equal(t, "reclaimed", len(c), n-1000+1) // b's and a's failed first
	if c[0].ID != a[0].ID || c[0].Attempt != 2 {
		t.Fatalf("retried sub-task: %+v, want %d at attempt 2", c[0], a[0].ID)
	}
	rs = rs[:0]
	for i, st := range c {
		rs = append(rs, store.SubtaskResult{ID: st.ID, Attempt: st.Attempt, Owner: "c", State: store.SubtaskSucceeded, Result: fmt.Sprint(i)})
	}
	rs[0].State = store.SubtaskFailed // its last attempt: failed for good
	equal(t, "accepted c", len(get(s.SubtasksComplete(ctx, rs)).ok(t)), len(c))
	counts := get(s.SubtaskCounts(ctx, x.ID)).ok(t)
	equal(t, "succeeded", counts[store.SubtaskSucceeded], int64(n-1))
	equal(t, "failed", counts[store.SubtaskFailed], int64(1))

	// Ready: claimed once for reduce; released with its dead reducer; ended by its owner only.
	ready := get(s.SubtaskMapsClaimReady(ctx, "c", []string{"h"}, 10)).ok(t)
	if len(ready) != 1 || ready[0].ExecutionID != x.ID || ready[0].State != store.MapReducing {
		t.Fatalf("ready maps: %+v", ready)
	}
	equal(t, "ready twice", len(get(s.SubtaskMapsClaimReady(ctx, "d", []string{"h"}, 10)).ok(t)), 0)
	equal(t, "owners of a map reduced", fmt.Sprint(get(s.SubtaskOwners(ctx, "")).ok(t)), "[c]")
	get(s.SubtasksRelease(ctx, []string{"c"})).ok(t)
	equal(t, "ready after release", len(get(s.SubtaskMapsClaimReady(ctx, "d", []string{"h"}, 10)).ok(t)), 1)
	equal(t, "ended by another", get(s.SubtaskMapEnd(ctx, x.ID, "c")).ok(t), false)
	equal(t, "ended", get(s.SubtaskMapEnd(ctx, x.ID, "d")).ok(t), true)
	equal(t, "lost once done", len(get(s.ExecutionsLoseRunning(ctx, own("dead"))).ok(t)), 1)

	page := get(s.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: x.ID, Limit: 10})).ok(t)
	equal(t, "page", len(page), 10)
	next := get(s.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: x.ID, AfterID: page[9].ID, Limit: 5000})).ok(t)
	equal(t, "rest", len(next), n-10)
	failed := get(s.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: x.ID, State: store.SubtaskFailed})).ok(t)
	if len(failed) != 1 || failed[0].ID != a[0].ID || failed[0].Message != "boom" && failed[0].Attempt != 2 {
		t.Fatalf("failed sub-tasks: %+v", failed)
	}

	// Retention deletes a run's sub-tasks and map with it.
	if n := get(s.ExecutionsDeleteFiredBefore(ctx, 1, 10)).ok(t); n != 1 {
		t.Fatalf("retention deleted %d executions, want the mapped one", n)
	}
	equal(t, "sub-tasks after retention", len(get(s.SubtaskCounts(ctx, x.ID)).ok(t)), 0)
	_, err = s.SubtaskMapGet(ctx, x.ID)
	wantErr(t, err, store.ErrNotFound)
}

// testSubtasksMapConcurrent: a handler maps the sub-tasks of one execution from several
// goroutines at once, the first map of it among them. Every call succeeds (on MySQL/MariaDB
// the first inserts of the map's row take locks that deadlock against each other, and a call
// the database rolled back is run again), and every sub-task is stored and counted once.
func testSubtasksMapConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "mr-concurrent")
	x := &store.Execution{JobID: j.ID, ScheduledAt: 6, Cause: store.CauseManual, State: store.ExecRunning, Node: "n"}
	get(s.ExecutionsInsert(ctx, []*store.Execution{x})).ok(t)
	m := &store.SubtaskMap{ExecutionID: x.ID, JobID: j.ID, Handler: "h"}
	const callers, each = 6, 40
	inserted, errs := make([]int, callers), make([]error, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range callers {
		part := make([]*store.Subtask, each)
		for k := range part {
			part[k] = &store.Subtask{Depth: 1, Seq: i*each + k, Payload: "{}"}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			inserted[i], errs[i] = s.SubtasksMap(ctx, m, part, 0)
		}()
	}
	close(start)
	wg.Wait()
	sum := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("map %d of %d at once: %v", i, callers, err)
		}
		sum += inserted[i]
	}
	equal(t, "inserted", sum, callers*each)
	equal(t, "total", get(s.SubtaskMapGet(ctx, x.ID)).ok(t).Total, int64(callers*each))
	equal(t, "pending", get(s.SubtaskCounts(ctx, x.ID)).ok(t)[store.SubtaskPending], int64(callers*each))
}
