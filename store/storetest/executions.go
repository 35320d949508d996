package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

func pending(jobID, triggerID, at int64, attempt int) *store.Execution {
	return &store.Execution{JobID: jobID, TriggerID: triggerID, ScheduledAt: at, Cause: store.CauseSchedule,
		Attempt: attempt, State: store.ExecPending}
}

func testExecutionsInsert(t *testing.T, s store.Store) {
	ctx := context.Background()
	full := &store.Execution{JobID: 1, TriggerID: 10, ScheduledAt: 1000, Cause: store.CauseSchedule, Attempt: 0,
		Node: "n1", ExecutorAddress: "http://10.0.0.1:9999", ShardIndex: 1, ShardTotal: 3, State: store.ExecAcquired,
		TriggerCode: 200, TriggerMsg: "ok", Data: map[string]any{"a": "b"}, Incarnation: "i1", ScriptVersion: 3,
		Params: "--fast", ExecutorApp: "billing", OutputLost: 7, IntervalStart: 500, IntervalEnd: 1000, FireZone: "Europe/London"}
	// Beside rows that leave those columns empty: a store may leave out of its insert a column
	// every row of the batch leaves empty, never one that a single row sets.
	batch := []*store.Execution{full, pending(1, 10, 2000, 0), pending(1, 0, 1000, 0), pending(1, 0, 1000, 0)}
	dups := get(s.ExecutionsInsert(ctx, batch)).ok(t)
	equal(t, "duplicates", len(dups), 0)
	seen := map[int64]bool{}
	for _, x := range batch {
		if x.ID == 0 || seen[x.ID] {
			t.Fatalf("ids after insert: %v", ids(batch, executionID))
		}
		seen[x.ID] = true
	}
	got := get(s.ExecutionGet(ctx, full.ID)).ok(t)
	want := *full
	want.AlarmState = store.AlarmNone
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("ExecutionGet = %+v, want %+v", got, &want)
	}
	equal(t, "manual run trigger", get(s.ExecutionGet(ctx, batch[2].ID)).ok(t).TriggerID, int64(0))
	empty := get(s.ExecutionGet(ctx, batch[1].ID)).ok(t)
	wantEmpty := *batch[1]
	wantEmpty.AlarmState = store.AlarmNone
	if !reflect.DeepEqual(empty, &wantEmpty) {
		t.Fatalf("ExecutionGet = %+v, want %+v", empty, &wantEmpty)
	}

	// A fire that exists is reported, not inserted; the rest of the batch goes in.
	again := pending(1, 10, 1000, 0)
	again.ShardIndex = full.ShardIndex // the fire key includes the shard
	retry := pending(1, 10, 1000, 1)
	twin1, twin2 := pending(1, 11, 5000, 0), pending(1, 11, 5000, 0)
	dups = get(s.ExecutionsInsert(ctx, []*store.Execution{again, retry, twin1, twin2})).ok(t)
	if len(dups) != 2 || dups[0] != again || dups[1] != twin2 {
		t.Fatalf("duplicates = %v, want the repeated fire and the second twin", dups)
	}
	if again.ID != 0 || twin2.ID != 0 || retry.ID == 0 || twin1.ID == 0 {
		t.Fatalf("ids: again %d retry %d twins %d %d", again.ID, retry.ID, twin1.ID, twin2.ID)
	}
	n := len(get(s.ExecutionList(ctx, store.ExecutionFilter{Limit: 100})).ok(t))
	equal(t, "stored executions", n, 6)

	// A batch bigger than one statement's chunk.
	many := make([]*store.Execution, 1200)
	for i := range many {
		many[i] = pending(2, 20, int64(i), 0)
	}
	many[1199] = pending(2, 20, 0, 0) // duplicates the first
	dups = get(s.ExecutionsInsert(ctx, many)).ok(t)
	if len(dups) != 1 || dups[0] != many[1199] {
		t.Fatalf("big batch duplicates = %d", len(dups))
	}
	equal(t, "big batch stored", get(s.ExecutionGet(ctx, many[1198].ID)).ok(t).ScheduledAt, int64(1198))

	// Executions inserted ended (a skipped fire) are stored ended, next to a live one; one
	// whose fire key a live execution has is a duplicate like any other.
	skipped := pending(3, 30, 100, 0)
	skipped.State, skipped.Node, skipped.FinishedAt = store.ExecSkipped, "n1", 100
	live := pending(3, 30, 200, 0)
	dupSkip := pending(3, 30, 200, 0)
	dupSkip.State = store.ExecSkipped
	dups = get(s.ExecutionsInsert(ctx, []*store.Execution{skipped, live, dupSkip})).ok(t)
	if len(dups) != 1 || dups[0] != dupSkip {
		t.Fatalf("duplicates = %v, want the skipped twin of the live fire", dups)
	}
	equal(t, "skipped stored", get(s.ExecutionGet(ctx, skipped.ID)).ok(t).State, store.ExecSkipped)
	equal(t, "live stored", get(s.ExecutionGet(ctx, live.ID)).ok(t).State, store.ExecPending)
	ended := get(s.ExecutionList(ctx, store.ExecutionFilter{JobID: 3, State: store.ExecSkipped})).ok(t)
	equal(t, "skipped listed", len(ended), 1)
	dups = get(s.ExecutionsInsert(ctx, []*store.Execution{dupSkip})).ok(t)
	equal(t, "an ended duplicate alone", len(dups), 1)
	// Live and ended ones read together; an unknown id is left out.
	both := get(s.ExecutionsGet(ctx, []int64{skipped.ID, 1 << 40, live.ID})).ok(t)
	states := map[int64]store.ExecutionState{}
	for _, x := range both {
		states[x.ID] = x.State
	}
	if len(both) != 2 || states[skipped.ID] != store.ExecSkipped || states[live.ID] != store.ExecPending {
		t.Fatalf("ExecutionsGet = %v, want the skipped and the pending execution", states)
	}

	_, err := s.ExecutionGet(ctx, 1<<40)
	wantErr(t, err, store.ErrNotFound)
}

func testExecutionLifecycle(t *testing.T, s store.Store) {
	ctx := context.Background()
	xs := []*store.Execution{pending(1, 1, 300, 0), pending(1, 1, 100, 0), pending(1, 1, 200, 0), pending(1, 1, 900, 0)}
	get(s.ExecutionsInsert(ctx, xs)).ok(t)
	running := &store.Execution{JobID: 1, TriggerID: 1, ScheduledAt: 50, Cause: store.CauseSchedule, State: store.ExecRunning, Node: "n1"}
	get(s.ExecutionsInsert(ctx, []*store.Execution{running})).ok(t)

	tx := get(s.Begin(ctx)).ok(t)
	due := get(tx.ExecutionsLockDuePending(ctx, 300, 10)).ok(t)
	equal(t, "due pending order", fmt.Sprint(ids(due, executionID)), fmt.Sprint([]int64{xs[1].ID, xs[2].ID, xs[0].ID}))
	won := get(tx.ExecutionsAcquire(ctx, own("n1"), ids(due, executionID))).ok(t)
	sameIDs(t, "acquired", won, ids(due, executionID))
	noErr(t, tx.Commit())
	equal(t, "acquired again", len(get(s.ExecutionsAcquire(ctx, own("n2"), won)).ok(t)), 0)
	x := get(s.ExecutionGet(ctx, xs[1].ID)).ok(t)
	if x.State != store.ExecAcquired || x.Node != "n1" {
		t.Fatalf("acquired execution: state %q node %q", x.State, x.Node)
	}

	// Only the owning node may start a fire, and only once.
	equal(t, "wrong node wins", len(get(s.ExecutionsMarkRunning(ctx, own("n2"), won, 400)).ok(t)), 0)
	got := get(s.ExecutionsMarkRunning(ctx, own("n1"), []int64{xs[1].ID, xs[2].ID, xs[3].ID}, 400)).ok(t)
	sameIDs(t, "marked running", got, []int64{xs[1].ID, xs[2].ID})
	equal(t, "marked twice", len(get(s.ExecutionsMarkRunning(ctx, own("n1"), got, 401)).ok(t)), 0)
	x = get(s.ExecutionGet(ctx, xs[1].ID)).ok(t)
	if x.State != store.ExecRunning || x.FiredAt != 400 {
		t.Fatalf("running execution: state %q fired %d", x.State, x.FiredAt)
	}

	done := get(s.ExecutionsComplete(ctx, []store.ExecutionResult{
		{ID: xs[1].ID, State: store.ExecSucceeded, HandleCode: 200, HandleMsg: "fine", StartedAt: 405, FinishedAt: 410,
			Data: map[string]any{"out": 1.0}},
		{ID: xs[2].ID, State: store.ExecFailed, HandleCode: 500, HandleMsg: "boom", FinishedAt: 420},
		{ID: xs[0].ID, State: store.ExecSucceeded, FinishedAt: 420}, // acquired, not running
		{ID: xs[3].ID, State: store.ExecSucceeded, FinishedAt: 420}, // pending
	})).ok(t)
	sameIDs(t, "completed", done, []int64{xs[1].ID, xs[2].ID})
	x = get(s.ExecutionGet(ctx, xs[1].ID)).ok(t)
	if x.State != store.ExecSucceeded || x.HandleCode != 200 || x.HandleMsg != "fine" || x.StartedAt != 405 ||
		x.FinishedAt != 410 || x.Data["out"] != 1.0 {
		t.Fatalf("succeeded execution: %+v", x)
	}
	x = get(s.ExecutionGet(ctx, xs[2].ID)).ok(t)
	if x.State != store.ExecFailed || x.HandleMsg != "boom" || x.Data != nil {
		t.Fatalf("failed execution: %+v", x)
	}
	again := get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: xs[1].ID, State: store.ExecFailed, FinishedAt: 500}})).ok(t)
	equal(t, "completed twice", len(again), 0)
	equal(t, "state after second completion", get(s.ExecutionGet(ctx, xs[1].ID)).ok(t).State, store.ExecSucceeded)
	_, err := s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: running.ID, State: store.ExecRunning}})
	if err == nil {
		t.Fatal("completing with a live state succeeded")
	}
}

// testExecutionsAcquireRace has nodes acquire the same pending executions concurrently: each
// must go to exactly one node.
func testExecutionsAcquireRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	xs := make([]*store.Execution, 40)
	for i := range xs {
		xs[i] = pending(1, 1, int64(i), 0)
	}
	get(s.ExecutionsInsert(ctx, xs)).ok(t)
	all := ids(xs, executionID)
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := fmt.Sprintf("n%d", w)
			won, err := s.ExecutionsAcquire(ctx, own(node), all)
			if err == nil {
				// Only the winner may start them.
				var running []int64
				running, err = s.ExecutionsMarkRunning(ctx, own(node), all, 1)
				if err == nil && len(running) != len(won) {
					err = fmt.Errorf("node %s acquired %d but started %d", node, len(won), len(running))
				}
			}
			mu.Lock()
			got = append(got, won...)
			mu.Unlock()
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		noErr(t, err)
	}
	sameIDs(t, "acquired executions (a duplicate means two nodes won one)", got, all)
}

func testExecutionsList(t *testing.T, s store.Store) {
	ctx := context.Background()
	var all, ofJob2, failed, inRange, manual, job2FailedManual []int64
	var jobs []int64
	for _, app := range []string{"billing", "reports"} {
		j := &store.Job{Group: "g", Name: app, TargetKind: store.TargetRemote, Handler: "h", App: app, Enabled: true}
		noErr(t, s.JobInsert(ctx, j))
		jobs = append(jobs, j.ID)
	}
	var xs []*store.Execution
	for i := range 25 {
		x := pending(jobs[i%2], 0, int64(i), 0)
		x.FiredAt = int64(1000 + i)
		if i%3 == 0 {
			x.State = store.ExecFailed
		}
		if i%4 == 1 {
			x.Cause = store.CauseManual
		}
		xs = append(xs, x)
	}
	get(s.ExecutionsInsert(ctx, xs)).ok(t)
	for i, x := range xs {
		all = append(all, x.ID)
		if x.JobID == jobs[1] {
			ofJob2 = append(ofJob2, x.ID)
		}
		if x.State == store.ExecFailed {
			failed = append(failed, x.ID)
		}
		if i >= 5 && i < 15 {
			inRange = append(inRange, x.ID)
		}
		if x.Cause == store.CauseManual {
			manual = append(manual, x.ID)
			if x.JobID == jobs[1] && x.State == store.ExecFailed {
				job2FailedManual = append(job2FailedManual, x.ID)
			}
		}
	}
	reversed := func(v []int64) []int64 {
		out := make([]int64, len(v))
		for i, x := range v {
			out[len(v)-1-i] = x
		}
		return out
	}
	for _, tc := range []struct {
		f    store.ExecutionFilter
		want []int64
	}{
		{store.ExecutionFilter{}, all},
		{store.ExecutionFilter{Desc: true}, reversed(all)},
		{store.ExecutionFilter{JobID: jobs[1]}, ofJob2},
		{store.ExecutionFilter{JobID: jobs[1], Desc: true}, reversed(ofJob2)},
		{store.ExecutionFilter{App: "reports"}, ofJob2},
		{store.ExecutionFilter{App: "reports", Desc: true}, reversed(ofJob2)},
		{store.ExecutionFilter{App: "nosuch"}, nil},
		{store.ExecutionFilter{State: store.ExecFailed}, failed},
		{store.ExecutionFilter{FiredFrom: 1005, FiredTo: 1015}, inRange},
		{store.ExecutionFilter{Cause: store.CauseManual, Desc: true}, reversed(manual)},
		{store.ExecutionFilter{App: "reports", State: store.ExecFailed, Cause: store.CauseManual}, job2FailedManual},
	} {
		var got []int64
		f := tc.f
		f.Limit = 4
		for {
			page := get(s.ExecutionList(ctx, f)).ok(t)
			if len(page) == 0 {
				break
			}
			got = append(got, ids(page, executionID)...)
			f.AfterID = page[len(page)-1].ID
		}
		equal(t, fmt.Sprintf("pages of %+v", tc.f), fmt.Sprint(got), fmt.Sprint(tc.want))
	}
}

func testRecovery(t *testing.T, s store.Store) {
	ctx := context.Background()
	mk := func(node string, state store.ExecutionState, at int64) *store.Execution {
		return &store.Execution{JobID: 1, TriggerID: 1, ScheduledAt: at, Cause: store.CauseSchedule, Node: node, State: state}
	}
	deadAcq, deadRun, liveAcq, liveRun := mk("dead", store.ExecAcquired, 1), mk("dead", store.ExecRunning, 2),
		mk("live", store.ExecAcquired, 3), mk("live", store.ExecRunning, 4)
	deadDone := mk("dead", store.ExecSucceeded, 5)
	deadRemote := mk("dead", store.ExecRunning, 6) // handed to an executor, which goes on
	deadSent := mk("dead", store.ExecRunning, 7)   // being sent when the node died: no executor took it
	get(s.ExecutionsInsert(ctx, []*store.Execution{deadAcq, deadRun, liveAcq, liveRun, deadDone, deadRemote, deadSent})).ok(t)
	for _, x := range []*store.Execution{deadRemote, deadSent} {
		equal(t, "dispatch recorded", get(recordSend(ctx, s, store.OwnerOf(x), x.ID, "http://exec:9999", "", 0, 0, "sent")).ok(t), true)
	}
	equal(t, "dispatch accepted", get(recordAccepted(ctx, s, own("dead"), deadRemote.ID)).ok(t), true)
	// Sent to a registered executor instance, its acceptance not recorded (the node died or
	// lost the database between the answer and the record): the executor may run it, and its
	// heartbeats decide. Sent to the instance before it (the executor restarted): lost.
	pool := &store.Job{Group: "g", Name: "pooled", TargetKind: store.TargetRemote, App: "pool", Handler: "h", Enabled: true,
		Concurrency: store.ConcurrencyAllow}
	if err := s.JobInsert(ctx, pool); err != nil {
		t.Fatal(err)
	}
	deadTaken, deadOldInstance := mk("dead", store.ExecRunning, 8), mk("dead", store.ExecRunning, 9)
	deadTaken.JobID, deadOldInstance.JobID = pool.ID, pool.ID
	get(s.ExecutionsInsert(ctx, []*store.Execution{deadTaken, deadOldInstance})).ok(t)
	if err := s.RegistryBeat(ctx, "pool", "http://exec:1", "i1", "", []string{"h"}); err != nil {
		t.Fatal(err)
	}
	equal(t, "dispatch to i1", get(recordSend(ctx, s, own("dead"), deadTaken.ID, "http://exec:1", "i1", 0, 0, "sent")).ok(t), true)
	equal(t, "dispatch to i0", get(recordSend(ctx, s, own("dead"), deadOldInstance.ID, "http://exec:1", "i0", 0, 0, "sent")).ok(t), true)

	equal(t, "released", get(s.ExecutionsReleaseAcquired(ctx, own("dead"))).ok(t), int64(1))
	x := get(s.ExecutionGet(ctx, deadAcq.ID)).ok(t)
	if x.State != store.ExecPending || x.Node != "" {
		t.Fatalf("released execution: state %q node %q", x.State, x.Node)
	}
	before := get(s.DBNow(ctx)).ok(t)
	lost := get(s.ExecutionsLoseRunning(ctx, own("dead"))).ok(t)
	sameIDs(t, "lost", ids(lost, executionID), []int64{deadRun.ID, deadSent.ID, deadOldInstance.ID})
	if lost[0].State != store.ExecLost || lost[0].FinishedAt < before-1000 {
		t.Fatalf("lost executions: %+v", lost)
	}
	equal(t, "stored state", get(s.ExecutionGet(ctx, deadRun.ID)).ok(t).State, store.ExecLost)
	equal(t, "live acquired untouched", get(s.ExecutionGet(ctx, liveAcq.ID)).ok(t).State, store.ExecAcquired)
	equal(t, "live running untouched", get(s.ExecutionGet(ctx, liveRun.ID)).ok(t).State, store.ExecRunning)
	equal(t, "terminal untouched", get(s.ExecutionGet(ctx, deadDone.ID)).ok(t).State, store.ExecSucceeded)
	equal(t, "remote run untouched", get(s.ExecutionGet(ctx, deadRemote.ID)).ok(t).State, store.ExecRunning)
	equal(t, "run sent to a registered instance untouched", get(s.ExecutionGet(ctx, deadTaken.ID)).ok(t).State, store.ExecRunning)

	// The dead node wakes up late: it can start nothing that was taken from it.
	equal(t, "late node starts", len(get(s.ExecutionsMarkRunning(ctx, own("dead"), []int64{deadAcq.ID}, 9)).ok(t)), 0)
	equal(t, "late node completes", len(get(s.ExecutionsComplete(ctx, []store.ExecutionResult{
		{ID: deadRun.ID, State: store.ExecSucceeded, FinishedAt: 9}})).ok(t)), 0)
	equal(t, "second release", get(s.ExecutionsReleaseAcquired(ctx, own("dead"))).ok(t), int64(0))
	equal(t, "second lose", len(get(s.ExecutionsLoseRunning(ctx, own("dead"))).ok(t)), 0)
}

// testExecutionsLatest: each job's newest execution, whether it still runs (the live table)
// or ended (the history), for many jobs at once; a job that never ran has none.
func testExecutionsLatest(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b, idle := newJob(t, s, "g", "a"), newJob(t, s, "g", "b"), newJob(t, s, "g", "idle")
	mk := func(job int64, state store.ExecutionState, at int64) *store.Execution {
		return &store.Execution{JobID: job, ScheduledAt: at, FiredAt: at, Cause: store.CauseAPI, Node: "n", State: state}
	}
	aOld, aRun := mk(a.ID, store.ExecSucceeded, 1), mk(a.ID, store.ExecRunning, 2)
	get(s.ExecutionsInsert(ctx, []*store.Execution{aOld, aRun})).ok(t)
	bRun := mk(b.ID, store.ExecRunning, 3)
	get(s.ExecutionsInsert(ctx, []*store.Execution{bRun})).ok(t)
	bDone := mk(b.ID, store.ExecFailed, 4)
	get(s.ExecutionsInsert(ctx, []*store.Execution{bDone})).ok(t)
	got := get(s.ExecutionsLatest(ctx, []int64{a.ID, b.ID, idle.ID, 99999})).ok(t)
	equal(t, "latest", fmt.Sprint(got), fmt.Sprint(map[int64]int64{a.ID: aRun.ID, b.ID: bDone.ID}))
	// b's run ends: it moves to the history and b's newest is still the failed one after it.
	get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: bRun.ID, State: store.ExecSucceeded, FinishedAt: 5}})).ok(t)
	got = get(s.ExecutionsLatest(ctx, []int64{b.ID})).ok(t)
	equal(t, "latest after an end", fmt.Sprint(got), fmt.Sprint(map[int64]int64{b.ID: bDone.ID}))
	equal(t, "no jobs", len(get(s.ExecutionsLatest(ctx, nil)).ok(t)), 0)
}

func testExecutionSweeps(t *testing.T, s store.Store) {
	ctx := context.Background()
	mk := func(job int64, state store.ExecutionState, fired int64) *store.Execution {
		return &store.Execution{JobID: job, ScheduledAt: fired, FiredAt: fired, Cause: store.CauseAPI, Node: "n", State: state}
	}
	run1, acq1, pend1, done1 := mk(1, store.ExecRunning, 10), mk(1, store.ExecAcquired, 20), mk(1, store.ExecPending, 0), mk(1, store.ExecSucceeded, 5)
	run2 := mk(2, store.ExecRunning, 30)
	get(s.ExecutionsInsert(ctx, []*store.Execution{run1, acq1, pend1, done1, run2})).ok(t)
	live := get(s.ExecutionsCountLive(ctx, []int64{1, 2, 3})).ok(t)
	equal(t, "live", fmt.Sprint(live), fmt.Sprint(map[int64]int{1: 2, 2: 1}))

	// A failure that must be reported carries a pending alarm; the sweep claims it once.
	get(s.ExecutionsComplete(ctx, []store.ExecutionResult{
		{ID: run1.ID, State: store.ExecFailed, FinishedAt: 40, AlarmState: store.AlarmPending},
		{ID: run2.ID, State: store.ExecSucceeded, FinishedAt: 40},
	})).ok(t)
	equal(t, "alarm of success", get(s.ExecutionGet(ctx, run2.ID)).ok(t).AlarmState, store.AlarmNone)
	alarms := get(s.ExecutionsAlarmPending(ctx, 0, 10)).ok(t)
	equal(t, "pending alarms", fmt.Sprint(ids(alarms, executionID)), fmt.Sprint([]int64{run1.ID}))
	claimed := get(s.ExecutionsSetAlarm(ctx, []int64{run1.ID, run2.ID}, store.AlarmPending, store.AlarmSending)).ok(t)
	sameIDs(t, "alarms claimed", claimed, []int64{run1.ID})
	equal(t, "claimed twice", len(get(s.ExecutionsSetAlarm(ctx, []int64{run1.ID}, store.AlarmPending, store.AlarmSending)).ok(t)), 0)
	equal(t, "pending after claim", len(get(s.ExecutionsAlarmPending(ctx, 0, 10)).ok(t)), 0)
	sent := get(s.ExecutionsSetAlarm(ctx, []int64{run1.ID}, store.AlarmSending, store.AlarmSent)).ok(t)
	sameIDs(t, "alarms sent", sent, []int64{run1.ID})
	equal(t, "alarm state", get(s.ExecutionGet(ctx, run1.ID)).ok(t).AlarmState, store.AlarmSent)

	// Retention: terminal executions fired before the horizon go, with their logs; live ones
	// stay, and so do ended ones whose alarm is still to be delivered.
	pendingAlarm, sendingAlarm := mk(3, store.ExecFailed, 7), mk(3, store.ExecFailed, 8)
	pendingAlarm.AlarmState = store.AlarmPending
	get(s.ExecutionsInsert(ctx, []*store.Execution{pendingAlarm, sendingAlarm})).ok(t)
	sameIDs(t, "alarm claimed", get(s.ExecutionsSetAlarm(ctx, []int64{sendingAlarm.ID}, store.AlarmNone, store.AlarmSending)).ok(t), []int64{sendingAlarm.ID})
	get(s.ExecutionLogAppend(ctx, done1.ID, []store.LogLine{{Line: 1, Message: "x"}})).ok(t)
	equal(t, "deleted", get(s.ExecutionsDeleteFiredBefore(ctx, 25, 1)).ok(t), int64(1)) // done1 (fired 5) first
	_, err := s.ExecutionGet(ctx, done1.ID)
	wantErr(t, err, store.ErrNotFound)
	equal(t, "logs of deleted", len(get(s.ExecutionLogList(ctx, done1.ID, 0, 10)).ok(t)), 0)
	equal(t, "deleted next", get(s.ExecutionsDeleteFiredBefore(ctx, 25, 10)).ok(t), int64(1)) // run1, failed at 10
	equal(t, "nothing left to delete", get(s.ExecutionsDeleteFiredBefore(ctx, 25, 10)).ok(t), int64(0))
	equal(t, "pending alarm kept", get(s.ExecutionGet(ctx, pendingAlarm.ID)).ok(t).AlarmState, store.AlarmPending)
	equal(t, "sending alarm kept", get(s.ExecutionGet(ctx, sendingAlarm.ID)).ok(t).AlarmState, store.AlarmSending)
	sameIDs(t, "alarm failed", get(s.ExecutionsSetAlarm(ctx, []int64{pendingAlarm.ID}, store.AlarmPending, store.AlarmFailed)).ok(t), []int64{pendingAlarm.ID})
	sameIDs(t, "alarm sent", get(s.ExecutionsSetAlarm(ctx, []int64{sendingAlarm.ID}, store.AlarmSending, store.AlarmSent)).ok(t), []int64{sendingAlarm.ID})
	equal(t, "deleted once their alarms are done", get(s.ExecutionsDeleteFiredBefore(ctx, 25, 10)).ok(t), int64(2))
	equal(t, "live kept", get(s.ExecutionGet(ctx, acq1.ID)).ok(t).State, store.ExecAcquired)
	equal(t, "newer kept", get(s.ExecutionGet(ctx, run2.ID)).ok(t).State, store.ExecSucceeded)
}

// testExecutionsListByFired: a fired-time range lists by fired time, then id, whatever order
// the ids came in, across the live table and the history, pages in that order, and never
// holds an execution not fired yet.
func testExecutionsListByFired(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := &store.Job{Group: "g", Name: "by-fired", TargetKind: store.TargetLocal, Handler: "h", Enabled: true}
	noErr(t, s.JobInsert(ctx, j))
	// Out of id order, with ties, running (live) and ended, one not fired (0).
	fired := []int64{5030, 5010, 5020, 5010, 0, 5040, 5020, 4990, 5050, 5010, 5030, 5000}
	var xs []*store.Execution
	for i, at := range fired {
		x := pending(j.ID, 0, int64(i), 0)
		x.FiredAt = at
		switch {
		case at == 0:
		case i%3 == 0:
			x.State, x.Node = store.ExecRunning, "n1"
		default:
			x.State = store.ExecSucceeded
		}
		if i%4 == 1 {
			x.Cause = store.CauseRecovery
		}
		xs = append(xs, x)
	}
	get(s.ExecutionsInsert(ctx, xs)).ok(t)
	want := func(f store.ExecutionFilter) []int64 {
		var in []*store.Execution
		for _, x := range xs {
			if x.FiredAt > 0 && x.FiredAt >= f.FiredFrom && (f.FiredTo == 0 || x.FiredAt < f.FiredTo) &&
				(f.Cause == "" || x.Cause == f.Cause) {
				in = append(in, x)
			}
		}
		slices.SortFunc(in, func(a, b *store.Execution) int {
			c := cmp.Or(cmp.Compare(a.FiredAt, b.FiredAt), cmp.Compare(a.ID, b.ID))
			if f.Desc {
				return -c
			}
			return c
		})
		return ids(in, executionID)
	}
	for _, f := range []store.ExecutionFilter{
		{FiredFrom: 5000, FiredTo: 5050},
		{FiredFrom: 5000, FiredTo: 5050, Desc: true},
		{FiredTo: 5045, Desc: true},
		{FiredFrom: 5010},
		{FiredFrom: 4000, Cause: store.CauseRecovery, Desc: true},
	} {
		for _, limit := range []int{2, 3, 100} {
			var got []int64
			page := f
			page.Limit = limit
			for range len(xs) + 1 {
				xs := get(s.ExecutionList(ctx, page)).ok(t)
				if len(xs) == 0 {
					break
				}
				got = append(got, ids(xs, executionID)...)
				page.AfterID = xs[len(xs)-1].ID
			}
			equal(t, fmt.Sprintf("pages of %d of %+v", limit, f), fmt.Sprint(got), fmt.Sprint(want(f)))
		}
	}
	_, err := s.ExecutionList(ctx, store.ExecutionFilter{FiredFrom: 4000, AfterID: xs[len(xs)-1].ID + 1000})
	var fe *schedule.FieldError
	if !errors.As(err, &fe) || fe.Field != "after" {
		t.Fatalf("a fired range after an execution not stored: %v, want an error naming after", err)
	}
	if _, err := s.ExecutionList(ctx, store.ExecutionFilter{Cause: "nosuch'"}); err == nil {
		t.Fatal("an unknown cause listed executions; want an error")
	}
}
