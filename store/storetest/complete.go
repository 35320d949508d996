package storetest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// testCompleteTwice writes one result batch twice, as a result writer does when a commit's
// answer was lost, with the same execution named twice in it (a fire started twice): every
// write succeeds, the first result of each execution is the one kept, and the second write
// changes nothing.
func testCompleteTwice(t *testing.T, s store.Store) {
	ctx := context.Background()
	var xs []*store.Execution
	for i := range 3 {
		xs = append(xs, &store.Execution{JobID: 1, TriggerID: 7, ScheduledAt: int64(100 * (i + 1)), Cause: store.CauseSchedule,
			State: store.ExecRunning, Node: "n1"})
	}
	get(s.ExecutionsInsert(ctx, xs)).ok(t)
	batch := []store.ExecutionResult{
		{ID: xs[0].ID, State: store.ExecSucceeded, HandleCode: 200, HandleMsg: "first", StartedAt: 1, FinishedAt: 2},
		{ID: xs[1].ID, State: store.ExecFailed, HandleCode: 500, HandleMsg: "boom", StartedAt: 1, FinishedAt: 3},
		{ID: xs[0].ID, State: store.ExecFailed, HandleCode: 500, HandleMsg: "second", StartedAt: 1, FinishedAt: 4},
	}
	sameIDs(t, "completed", get(s.ExecutionsComplete(ctx, batch)).ok(t), []int64{xs[0].ID, xs[1].ID})
	first := get(s.ExecutionsGet(ctx, []int64{xs[0].ID, xs[1].ID})).ok(t)
	equal(t, "kept result", first[0].HandleMsg+first[1].HandleMsg, "firstboom")

	equal(t, "completed again", len(get(s.ExecutionsComplete(ctx, batch)).ok(t)), 0)
	again := get(s.ExecutionsGet(ctx, []int64{xs[0].ID, xs[1].ID})).ok(t)
	if !reflect.DeepEqual(again, first) {
		t.Fatalf("a second write of the batch changed the history: %+v, was %+v", again, first)
	}
	equal(t, "untouched execution", get(s.ExecutionGet(ctx, xs[2].ID)).ok(t).State, store.ExecRunning)
}

// testAlarmReclaim checks that an alarm left sending is claimed again once its claim is older
// than the caller's bound, and only then, and that a recorded alarm is not.
func testAlarmReclaim(t *testing.T, s store.Store) {
	ctx := context.Background()
	x := &store.Execution{JobID: 1, TriggerID: 3, ScheduledAt: 10, Cause: store.CauseSchedule, State: store.ExecFailed,
		AlarmState: store.AlarmPending}
	get(s.ExecutionsInsert(ctx, []*store.Execution{x})).ok(t)
	sameIDs(t, "claimed", get(s.ExecutionsSetAlarm(ctx, []int64{x.ID}, store.AlarmPending, store.AlarmSending)).ok(t), []int64{x.ID})
	// Listed by its alarm state (how an operator finds the alarms a dead node left sending).
	sameIDs(t, "listed sending", ids(get(s.ExecutionList(ctx, store.ExecutionFilter{AlarmState: store.AlarmSending})).ok(t), executionID), []int64{x.ID})
	equal(t, "listed pending", len(get(s.ExecutionList(ctx, store.ExecutionFilter{AlarmState: store.AlarmPending})).ok(t)), 0)
	equal(t, "reclaimed while fresh", len(get(s.ExecutionsAlarmReclaim(ctx, time.Hour, 10)).ok(t)), 0)
	// A bound in the future stands for a claim that grew old.
	again := get(s.ExecutionsAlarmReclaim(ctx, -time.Minute, 10)).ok(t)
	sameIDs(t, "reclaimed when old", ids(again, executionID), []int64{x.ID})
	equal(t, "reclaimed state", again[0].AlarmState, store.AlarmSending)
	equal(t, "reclaimed twice while fresh", len(get(s.ExecutionsAlarmReclaim(ctx, time.Hour, 10)).ok(t)), 0)
	sameIDs(t, "recorded", get(s.ExecutionsSetAlarm(ctx, []int64{x.ID}, store.AlarmSending, store.AlarmSent)).ok(t), []int64{x.ID})
	equal(t, "reclaimed after it was sent", len(get(s.ExecutionsAlarmReclaim(ctx, -time.Minute, 10)).ok(t)), 0)
}

// testNoEndedTwin inserts again fires whose executions have ended (a scheduled fire, a retry,
// a broadcast shard): each is refused as a duplicate, as a twin of a live fire is.
func testNoEndedTwin(t *testing.T, s store.Store) {
	ctx := context.Background()
	fire := func(attempt, shard int) *store.Execution {
		return &store.Execution{JobID: 1, TriggerID: 4, ScheduledAt: 500, Cause: store.CauseSchedule, Attempt: attempt,
			ShardIndex: shard, ShardTotal: 2, State: store.ExecRunning, Node: "n1"}
	}
	ended := []*store.Execution{fire(0, 0), fire(1, 0), fire(0, 1)}
	get(s.ExecutionsInsert(ctx, ended)).ok(t)
	var rs []store.ExecutionResult
	for _, x := range ended {
		rs = append(rs, store.ExecutionResult{ID: x.ID, State: store.ExecFailed, FinishedAt: 600})
	}
	equal(t, "ended", len(get(s.ExecutionsComplete(ctx, rs)).ok(t)), 3)

	twins := []*store.Execution{fire(0, 0), fire(1, 0), fire(0, 1), fire(2, 0)}
	for _, x := range twins {
		x.State = store.ExecPending
	}
	dups := get(s.ExecutionsInsert(ctx, twins)).ok(t)
	equal(t, "twins of ended fires refused", len(dups), 3)
	if twins[3].ID == 0 {
		t.Fatal("a new attempt was refused with the twins")
	}
	live := get(s.ExecutionsCountLive(ctx, []int64{1})).ok(t)
	equal(t, "live executions of the job", live[1], 0) // the new attempt is pending, not in flight
}

// testNoTwinWhileEnding races the insert of a fire's twin with the move of the fire itself
// from the live table to the history (its result being written): whichever wins, the twin
// must not be left in the live table beside the ended fire. A probe of the history taken
// before the move commits would miss it, and the live table's key, freed by the move, would
// let the twin in.
func testNoTwinWhileEnding(t *testing.T, s store.Store) {
	ctx := context.Background()
	const rounds = 150
	twins := 0
	for i := range rounds {
		key := func() *store.Execution {
			return &store.Execution{JobID: 1, TriggerID: 5, ScheduledAt: int64(1000 + i), Cause: store.CauseSchedule,
				State: store.ExecRunning, Node: "n1"}
		}
		x := key()
		get(s.ExecutionsInsert(ctx, []*store.Execution{x})).ok(t)
		twin := key()
		twin.State = store.ExecPending
		var wg sync.WaitGroup
		start := make(chan struct{})
		var completeErr, insertErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			_, completeErr = s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: x.ID, State: store.ExecSucceeded, FinishedAt: 2}})
		}()
		go func() {
			defer wg.Done()
			<-start
			_, insertErr = s.ExecutionsInsert(ctx, []*store.Execution{twin})
		}()
		close(start)
		wg.Wait()
		if completeErr != nil {
			t.Fatalf("round %d: complete: %v", i, completeErr)
		}
		if insertErr != nil && !errors.Is(insertErr, store.ErrAlreadyExists) && !isDeadlock(insertErr) {
			t.Fatalf("round %d: insert the twin: %v", i, insertErr)
		}
		if twin.ID != 0 && insertErr == nil {
			if got, err := s.ExecutionGet(ctx, twin.ID); err == nil && got.ID != x.ID {
				twins++
			}
		}
	}
	if twins > 0 {
		t.Fatalf("%d of %d twins of a fire were inserted while it ended", twins, rounds)
	}
}

// isDeadlock reports whether err is a deadlock the database broke by failing one side: the
// insert was not applied, which is as good as refused.
func isDeadlock(err error) bool {
	return strings.Contains(err.Error(), "Deadlock") || strings.Contains(err.Error(), "deadlock")
}

// testJobAlarmState: a job's alarm state starts empty, is written with a compare-and-set on
// its version (a stale writer, first or later, gets ErrConflict and changes nothing) and goes
// with its job.
func testJobAlarmState(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "alarmed")
	empty := get(s.JobAlarmGet(ctx, j.ID)).ok(t)
	if empty.JobID != j.ID || empty.Version != 0 || empty.Open || empty.Failures != 0 {
		t.Fatalf("JobAlarmGet of a new job = %+v, want a zero row", empty)
	}
	a, b := *empty, *empty
	a.Failures, a.FailedAt, a.Decided = 1, []int64{5, 9}, []store.AlarmDecided{{ExecutionID: 3, Decision: "quiet"}}
	noErr(t, s.JobAlarmPut(ctx, &a))
	equal(t, "version after the first write", a.Version, int64(1))
	b.Failures = 7
	wantErr(t, s.JobAlarmPut(ctx, &b), store.ErrConflict) // a second first writer
	stale := a
	a.Open, a.LastAlarmAt, a.Failures = true, 42, 0
	noErr(t, s.JobAlarmPut(ctx, &a))
	equal(t, "version after the second write", a.Version, int64(2))
	stale.Failures = 9
	wantErr(t, s.JobAlarmPut(ctx, &stale), store.ErrConflict)
	got := get(s.JobAlarmGet(ctx, j.ID)).ok(t)
	if !reflect.DeepEqual(got, &a) {
		t.Fatalf("JobAlarmGet = %+v, want %+v", got, a)
	}
	noErr(t, s.JobDelete(ctx, j.ID))
	equal(t, "version once the job is gone", get(s.JobAlarmGet(ctx, j.ID)).ok(t).Version, int64(0))
}
