package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// testWorkflows checks workflows (unique name, versioned update), runs (finish is a
// compare-and-set on running) and node states (one per run and node, updated by
// compare-and-set), and that an execution keeps its workflow node from the live table to the
// history.
func testWorkflows(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := &store.Workflow{Name: "etl", Graph: `{"nodes":[{"name":"a","job_id":1}]}`, Params: `{"day":"x"}`}
	noErr(t, s.WorkflowInsert(ctx, w))
	var exists *store.ExistsError
	if err := s.WorkflowInsert(ctx, &store.Workflow{Name: "etl", Graph: "{}"}); !errors.As(err, &exists) || exists.Kind != "workflow" {
		t.Fatalf("a second workflow etl: %v, want an ExistsError", err)
	}
	equal(t, "by name", get(s.WorkflowGetByName(ctx, "etl")).ok(t).ID, w.ID)
	stale := *w
	w.Description = "nightly"
	noErr(t, s.WorkflowUpdate(ctx, w))
	equal(t, "version", w.Version, int64(2))
	wantErr(t, s.WorkflowUpdate(ctx, &stale), store.ErrConflict)
	equal(t, "kept description", get(s.WorkflowGet(ctx, w.ID)).ok(t).Description, "nightly")
	wantErr(t, s.WorkflowUpdate(ctx, &store.Workflow{ID: w.ID + 100, Version: 1}), store.ErrNotFound)
	equal(t, "listed", len(get(s.WorkflowList(ctx, 0, 10)).ok(t)), 1)

	r := &store.WorkflowRun{WorkflowID: w.ID, State: "running", Graph: w.Graph, Params: w.Params, Cause: store.CauseManual}
	noErr(t, s.WorkflowRunInsert(ctx, r))
	r2 := &store.WorkflowRun{WorkflowID: w.ID, State: "running", Graph: w.Graph, Params: "{}", Cause: store.CauseBackfill,
		Version: 2, DeadlineAt: 1000, ParentNode: 77, IntervalStart: 1_000, IntervalEnd: 2_000, BackfillID: 7}
	noErr(t, s.WorkflowRunInsert(ctx, r2))
	back := get(s.WorkflowRunGet(ctx, r2.ID)).ok(t)
	equal(t, "version, deadline, parent", [3]int64{back.Version, back.DeadlineAt, back.ParentNode}, [3]int64{2, 1000, 77})
	equal(t, "a backfill run's interval and backfill", [3]int64{back.IntervalStart, back.IntervalEnd, back.BackfillID}, [3]int64{1_000, 2_000, 7})
	equal(t, "a run by hand has none", get(s.WorkflowRunGet(ctx, r.ID)).ok(t).IntervalEnd, int64(0))
	equal(t, "backfill 7's running runs", get(s.WorkflowRunsLiveOfBackfill(ctx, 7)).ok(t), 1)
	equal(t, "backfill 8's running runs", get(s.WorkflowRunsLiveOfBackfill(ctx, 8)).ok(t), 0)
	// Overdue: running with a deadline passed; a run without a deadline never is.
	equal(t, "not yet overdue", len(get(s.WorkflowRunsOverdue(ctx, 999, 10)).ok(t)), 0)
	sameIDs(t, "overdue", ids(get(s.WorkflowRunsOverdue(ctx, 1000, 10)).ok(t), func(r *store.WorkflowRun) int64 { return r.ID }), []int64{r2.ID})
	equal(t, "running runs", get(s.WorkflowRunsRunning(ctx, w.ID)).ok(t), 2)
	sameIDs(t, "runs", ids(get(s.WorkflowRunList(ctx, w.ID, 0, 10)).ok(t), func(r *store.WorkflowRun) int64 { return r.ID }), []int64{r.ID, r2.ID})
	equal(t, "runs before", len(get(s.WorkflowRunList(ctx, w.ID, r2.ID, 10)).ok(t)), 1)

	a := &store.WorkflowNode{RunID: r.ID, Node: "a", State: "running", Input: `{"params":{}}`}
	noErr(t, s.WorkflowNodesInsert(ctx, []*store.WorkflowNode{a}))
	wantErr(t, s.WorkflowNodesInsert(ctx, []*store.WorkflowNode{{RunID: r.ID, Node: "a", State: "running"}}), store.ErrAlreadyExists)
	noErr(t, s.WorkflowNodesInsert(ctx, []*store.WorkflowNode{{RunID: r2.ID, Node: "a", State: "skipped"}}))

	// The node's execution keeps its node through completion into the history.
	j := newJob(t, s, "g", "wf")
	x := &store.Execution{JobID: j.ID, ScheduledAt: 5, Cause: store.CauseWorkflow, State: store.ExecRunning, Node: "n1", WorkflowNode: a.ID}
	get(s.ExecutionsInsert(ctx, []*store.Execution{x})).ok(t)
	equal(t, "live workflow node", get(s.ExecutionGet(ctx, x.ID)).ok(t).WorkflowNode, a.ID)
	sameIDs(t, "completed", get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: x.ID, State: store.ExecSucceeded, FinishedAt: 9}})).ok(t), []int64{x.ID})
	done := get(s.ExecutionGet(ctx, x.ID)).ok(t)
	equal(t, "history workflow node", done.WorkflowNode, a.ID)
	equal(t, "history state", done.State, store.ExecSucceeded)

	sub := &store.WorkflowNode{RunID: r.ID, Node: "sub", State: "running", ChildRun: r2.ID}
	noErr(t, s.WorkflowNodesInsert(ctx, []*store.WorkflowNode{sub}))
	equal(t, "sub-workflow node's child run", get(s.WorkflowNodesGet(ctx, []int64{sub.ID})).ok(t)[0].ChildRun, r2.ID)
	sub.ChildRun = r.ID + r2.ID // retried: a new child run
	equal(t, "sub-workflow node moved", get(s.WorkflowNodeUpdate(ctx, sub, "running")).ok(t), true)
	equal(t, "sub-workflow node's new child run", get(s.WorkflowNodesGet(ctx, []int64{sub.ID})).ok(t)[0].ChildRun, r.ID+r2.ID)
	noErr(t, s.WorkflowNodesDelete(ctx, r.ID, []int64{sub.ID}))

	a.State, a.ExecutionID, a.Result = "succeeded", x.ID, `{"rows":3}`
	equal(t, "node moved", get(s.WorkflowNodeUpdate(ctx, a, "running")).ok(t), true)
	equal(t, "node moved twice", get(s.WorkflowNodeUpdate(ctx, a, "running")).ok(t), false)
	got := get(s.WorkflowNodesGet(ctx, []int64{a.ID})).ok(t)
	equal(t, "node result", got[0].Result+got[0].State, `{"rows":3}succeeded`)
	equal(t, "node execution", got[0].ExecutionID, x.ID)
	equal(t, "nodes of run", len(get(s.WorkflowNodes(ctx, r.ID)).ok(t)), 1)

	equal(t, "finished", get(s.WorkflowRunFinish(ctx, r.ID, "succeeded", "", 10)).ok(t), true)
	equal(t, "finished twice", get(s.WorkflowRunFinish(ctx, r.ID, "failed", "late", 11)).ok(t), false)
	equal(t, "running runs after a finish", get(s.WorkflowRunsRunning(ctx, w.ID)).ok(t), 1)
	fin := get(s.WorkflowRunGet(ctx, r.ID)).ok(t)
	equal(t, "run state", fin.State+fin.Message, "succeeded")
	equal(t, "run finished at", fin.FinishedAt, int64(10))

	// Reopen is a compare-and-set on the ended state; deleting nodes leaves other runs'.
	equal(t, "reopen from a state it is not in", get(s.WorkflowRunReopen(ctx, r.ID, "failed", 0)).ok(t), false)
	equal(t, "reopened", get(s.WorkflowRunReopen(ctx, r.ID, "succeeded", 500)).ok(t), true)
	equal(t, "reopened twice", get(s.WorkflowRunReopen(ctx, r.ID, "succeeded", 500)).ok(t), false)
	re := get(s.WorkflowRunGet(ctx, r.ID)).ok(t)
	equal(t, "reopened run", fmt.Sprintln(re.State, re.FinishedAt, re.DeadlineAt), "running 0 500\n")
	other := get(s.WorkflowNodes(ctx, r2.ID)).ok(t)
	noErr(t, s.WorkflowNodesDelete(ctx, r.ID, []int64{a.ID, other[0].ID}))
	equal(t, "nodes of run after delete", len(get(s.WorkflowNodes(ctx, r.ID)).ok(t)), 0)
	equal(t, "other run's node kept", len(get(s.WorkflowNodes(ctx, r2.ID)).ok(t)), 1)
	equal(t, "finished again", get(s.WorkflowRunFinish(ctx, r.ID, "succeeded", "", 10)).ok(t), true)
	// Retention: runs that ended before the instant go, with their nodes; running ones stay.
	equal(t, "nothing ended before 10", get(s.WorkflowRunsDeleteFinishedBefore(ctx, 10, 100)).ok(t), int64(0))
	equal(t, "ended before 11", get(s.WorkflowRunsDeleteFinishedBefore(ctx, 11, 100)).ok(t), int64(1))
	wantErr(t, get(s.WorkflowRunGet(ctx, r.ID)).err, store.ErrNotFound)
	equal(t, "running run kept", get(s.WorkflowRunGet(ctx, r2.ID)).ok(t).State, "running")
	equal(t, "its node kept", len(get(s.WorkflowNodes(ctx, r2.ID)).ok(t)), 1)

	// Canceling what has not started: pending and acquired executions move, a running one
	// does not.
	xs := []*store.Execution{
		{JobID: j.ID, ScheduledAt: 20, Cause: store.CauseWorkflow, State: store.ExecPending, WorkflowNode: a.ID},
		{JobID: j.ID, ScheduledAt: 21, Cause: store.CauseWorkflow, State: store.ExecPending},
		{JobID: j.ID, ScheduledAt: 22, Cause: store.CauseWorkflow, State: store.ExecRunning, Node: "n1"},
	}
	get(s.ExecutionsInsert(ctx, xs)).ok(t)
	sameIDs(t, "acquired", get(s.ExecutionsAcquire(ctx, own("n1"), []int64{xs[1].ID})).ok(t), []int64{xs[1].ID})
	sameIDs(t, "canceled", get(s.ExecutionsCancelUnstarted(ctx, []int64{xs[0].ID, xs[1].ID, xs[2].ID}, "run canceled")).ok(t),
		[]int64{xs[0].ID, xs[1].ID})
	c := get(s.ExecutionGet(ctx, xs[0].ID)).ok(t)
	equal(t, "canceled state", string(c.State)+" "+c.HandleMsg, "canceled run canceled")
	equal(t, "canceled keeps its node", c.WorkflowNode, a.ID)
	equal(t, "running kept", get(s.ExecutionGet(ctx, xs[2].ID)).ok(t).State, store.ExecRunning)
	sameIDs(t, "claimed after the cancel", get(s.ExecutionsMarkRunning(ctx, own("n1"), []int64{xs[1].ID}, 30)).ok(t), nil)

	// A workflow's overlap policy round-trips; its queued runs are listed oldest first, are
	// live for a backfill, can be finished (skipped) and started (reopened from queued), and
	// are never deleted by retention (finished_at 0).
	w.Concurrency, w.MaxConcurrent = "at_most", 3
	noErr(t, s.WorkflowUpdate(ctx, w))
	noErr(t, store.InTx(ctx, s, func(q store.Querier) error {
		locked, err := q.WorkflowLock(ctx, w.ID)
		if err == nil {
			equal(t, "locked workflow's policy", fmt.Sprint(locked.Concurrency, locked.MaxConcurrent), "at_most3")
		}
		return err
	}))
	wantErr(t, store.InTx(ctx, s, func(q store.Querier) error { _, err := q.WorkflowLock(ctx, w.ID+100); return err }), store.ErrNotFound)
	q1 := &store.WorkflowRun{WorkflowID: w.ID, State: "queued", Graph: w.Graph, CreatedAt: 40, BackfillID: 9}
	q2 := &store.WorkflowRun{WorkflowID: w.ID, State: "queued", Graph: w.Graph, CreatedAt: 41}
	noErr(t, s.WorkflowRunInsert(ctx, q1))
	noErr(t, s.WorkflowRunInsert(ctx, q2))
	runID := func(r *store.WorkflowRun) int64 { return r.ID }
	equal(t, "queued, oldest first", fmt.Sprint(ids(get(s.WorkflowRunsInState(ctx, w.ID, "queued", 10)).ok(t), runID)), fmt.Sprint([]int64{q1.ID, q2.ID}))
	equal(t, "queued of every workflow", len(get(s.WorkflowRunsInState(ctx, 0, "queued", 10)).ok(t)), 2)
	equal(t, "queued of another workflow", len(get(s.WorkflowRunsInState(ctx, w.ID+100, "queued", 10)).ok(t)), 0)
	equal(t, "a queued run is live for its backfill", get(s.WorkflowRunsLiveOfBackfill(ctx, 9)).ok(t), 1)
	equal(t, "queued run skipped", get(s.WorkflowRunFinish(ctx, q2.ID, "skipped", "dropped", 42)).ok(t), true)
	equal(t, "queued run started", get(s.WorkflowRunReopen(ctx, q1.ID, "queued", 0)).ok(t), true)
	equal(t, "none queued", len(get(s.WorkflowRunsInState(ctx, w.ID, "queued", 10)).ok(t)), 0)

	noErr(t, s.WorkflowDelete(ctx, w.ID))
	wantErr(t, s.WorkflowDelete(ctx, w.ID), store.ErrNotFound)
	equal(t, "runs outlive their workflow", get(s.WorkflowRunGet(ctx, r2.ID)).ok(t).State, "running")
}

// testWorkflowRunLock checks that WorkflowRunLock serialises the advances of one run: while
// one transaction holds the run, another cannot take it (its wait is cut short by its
// context here), and once the first commits the next holder sees the node it inserted, so
// two nodes that end at once cannot both miss the node waiting for them.
func testWorkflowRunLock(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := &store.WorkflowRun{WorkflowID: 1, State: "running", Graph: "{}", Params: "{}"}
	noErr(t, s.WorkflowRunInsert(ctx, r))
	tx1 := get(s.Begin(ctx)).ok(t)
	defer tx1.Rollback()
	get(tx1.WorkflowRunLock(ctx, r.ID)).ok(t)
	noErr(t, tx1.WorkflowNodesInsert(ctx, []*store.WorkflowNode{{RunID: r.ID, Node: "b", State: "running"}}))
	// A second holder must wait: give up its wait after a while. (A wait that ends is the
	// expected outcome; only a lock that does not hold lets the second one in.)
	took := make(chan error, 1)
	go func() {
		ctx2, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		tx2, err := s.Begin(ctx2)
		if err != nil {
			took <- err // SQLite: the database's write lock is the run's
			return
		}
		defer tx2.Rollback()
		_, err = tx2.WorkflowRunLock(ctx2, r.ID)
		took <- err
	}()
	if err := <-took; err == nil {
		t.Fatal("a second transaction locked the run while the first held it")
	}
	noErr(t, tx1.Commit())
	tx3 := get(s.Begin(ctx)).ok(t)
	defer tx3.Rollback()
	get(tx3.WorkflowRunLock(ctx, r.ID)).ok(t)
	ns := get(tx3.WorkflowNodes(ctx, r.ID)).ok(t)
	if len(ns) != 1 || ns[0].Node != "b" {
		t.Fatalf("the next holder of the run's lock saw nodes %+v, want the first's b", ns)
	}
	noErr(t, tx3.Commit())
}
