package storetest

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

func testTriggers(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "j")
	noErr(t, s.CalendarPut(ctx, &store.Calendar{Name: "holidays", Spec: `{"dates":["2026-12-25"]}`}))
	tr := &store.Trigger{JobID: j.ID, Group: "tg", Name: "every-minute", Description: "d", Kind: store.TriggerCron,
		Spec: `{"expr":"0 * * * * ?"}`, TimeZone: "Europe/Paris", StartAt: 1000, EndAt: 9_000_000, CalendarName: "holidays",
		MisfirePolicy: "fire_once_now", NextFireAt: 60_000, RunLimit: 12}
	noErr(t, s.TriggerInsert(ctx, tr))
	equal(t, "default priority", tr.Priority, store.DefaultPriority)
	equal(t, "default state", tr.State, store.TriggerWaiting)
	equal(t, "first version", tr.Version, int64(1))
	got := get(s.TriggerGet(ctx, tr.ID)).ok(t)
	if !reflect.DeepEqual(got, tr) {
		t.Fatalf("TriggerGet = %+v, want %+v", got, tr)
	}
	got = get(s.TriggerGetByKey(ctx, "tg", "every-minute")).ok(t)
	equal(t, "TriggerGetByKey id", got.ID, tr.ID)

	err := s.TriggerInsert(ctx, &store.Trigger{JobID: j.ID, Group: "tg", Name: "every-minute", Kind: store.TriggerCron})
	wantErr(t, err, store.ErrAlreadyExists)
	err = s.TriggerInsert(ctx, &store.Trigger{JobID: j.ID + 1000, Group: "tg", Name: "orphan", Kind: store.TriggerCron})
	wantErr(t, err, store.ErrNotFound)
	err = s.TriggerInsert(ctx, &store.Trigger{JobID: j.ID, Group: "tg", Name: "nocal", Kind: store.TriggerCron, CalendarName: "missing"})
	wantErr(t, err, store.ErrNotFound)

	// Optimistic update: a stale copy is refused.
	stale := *got
	got.Priority, got.CalendarName, got.Description, got.RunLimit = 9, "", "changed", 3
	noErr(t, s.TriggerUpdate(ctx, got))
	equal(t, "version after update", got.Version, int64(2))
	again := get(s.TriggerGet(ctx, tr.ID)).ok(t)
	if again.Priority != 9 || again.CalendarName != "" || again.Description != "changed" || again.Version != 2 || again.RunLimit != 3 {
		t.Fatalf("after TriggerUpdate: %+v", again)
	}
	stale.Description = "lost update"
	wantErr(t, s.TriggerUpdate(ctx, &stale), store.ErrConflict)

	noErr(t, s.TriggerSetError(ctx, tr.ID, "spec does not parse"))
	again = get(s.TriggerGet(ctx, tr.ID)).ok(t)
	if again.State != store.TriggerError || again.ErrorMessage != "spec does not parse" {
		t.Fatalf("after TriggerSetError: state %q message %q", again.State, again.ErrorMessage)
	}

	noErr(t, s.TriggerDelete(ctx, tr.ID))
	_, err = s.TriggerGet(ctx, tr.ID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.TriggerDelete(ctx, tr.ID), store.ErrNotFound)
	wantErr(t, s.TriggerUpdate(ctx, again), store.ErrNotFound)
	wantErr(t, s.TriggerSetError(ctx, tr.ID, "x"), store.ErrNotFound)
}

func testTriggersPagination(t *testing.T, s store.Store) {
	ctx := context.Background()
	j1, j2 := newJob(t, s, "g", "j1"), newJob(t, s, "g", "j2")
	j3 := newJob(t, s, "g", "j3") // has no triggers
	var all, ofJ2, inB []int64
	for i := range 17 {
		j, group := j1, "a"
		if i%2 == 0 {
			j = j2
		}
		if i%5 == 0 {
			group = "b"
		}
		tr := newTrigger(t, s, j.ID, group, fmt.Sprintf("t%02d", i), int64(i))
		all = append(all, tr.ID)
		if j == j2 {
			ofJ2 = append(ofJ2, tr.ID)
		}
		if group == "b" {
			inB = append(inB, tr.ID)
		}
	}
	for _, tc := range []struct {
		f    store.TriggerFilter
		want []int64
	}{
		{store.TriggerFilter{}, all},
		{store.TriggerFilter{JobID: j2.ID}, ofJ2},
		{store.TriggerFilter{JobIDs: []int64{j2.ID, j3.ID}}, ofJ2},
		{store.TriggerFilter{JobIDs: []int64{j3.ID, j1.ID, j2.ID}}, all},
		{store.TriggerFilter{Group: "b"}, inB},
		{store.TriggerFilter{State: store.TriggerPaused}, nil},
	} {
		var got []int64
		f := tc.f
		f.Limit = 4
		for {
			ts := get(s.TriggerList(ctx, f)).ok(t)
			if len(ts) == 0 {
				break
			}
			got = append(got, ids(ts, triggerID)...)
			f.AfterID = ts[len(ts)-1].ID
		}
		equal(t, fmt.Sprintf("pages of %+v", tc.f), fmt.Sprint(got), fmt.Sprint(tc.want))
	}
}

func states(t *testing.T, s store.Store, ids ...int64) []store.TriggerState {
	t.Helper()
	out := make([]store.TriggerState, len(ids))
	for i, id := range ids {
		out[i] = get(s.TriggerGet(context.Background(), id)).ok(t).State
	}
	return out
}

func testPauseResume(t *testing.T, s store.Store) {
	ctx := context.Background()
	j1, j2 := newJob(t, s, "g", "j1"), newJob(t, s, "g", "j2")
	a1 := newTrigger(t, s, j1.ID, "A", "a1", 10).ID
	a2 := newTrigger(t, s, j2.ID, "A", "a2", 10).ID
	b1 := newTrigger(t, s, j1.ID, "B", "b1", 10).ID
	P, W := store.TriggerPaused, store.TriggerWaiting

	equal(t, "paused by trigger", get(s.TriggersPause(ctx, store.TriggerSelector{TriggerID: a1})).ok(t), int64(1))
	equal(t, "states", fmt.Sprint(states(t, s, a1, a2, b1)), fmt.Sprint([]store.TriggerState{P, W, W}))
	equal(t, "resumed by trigger", get(s.TriggersResume(ctx, store.TriggerSelector{TriggerID: a1})).ok(t), int64(1))

	equal(t, "paused by job", get(s.TriggersPause(ctx, store.TriggerSelector{JobID: j1.ID})).ok(t), int64(2))
	equal(t, "states", fmt.Sprint(states(t, s, a1, a2, b1)), fmt.Sprint([]store.TriggerState{P, W, P}))
	equal(t, "paused again", get(s.TriggersPause(ctx, store.TriggerSelector{JobID: j1.ID})).ok(t), int64(0))
	equal(t, "resumed by job", get(s.TriggersResume(ctx, store.TriggerSelector{JobID: j1.ID})).ok(t), int64(2))

	// A paused group also holds triggers added to it later.
	equal(t, "paused group", get(s.TriggersPause(ctx, store.TriggerSelector{Group: "A"})).ok(t), int64(2))
	equal(t, "states", fmt.Sprint(states(t, s, a1, a2, b1)), fmt.Sprint([]store.TriggerState{P, P, W}))
	equal(t, "paused groups", fmt.Sprint(get(s.PausedGroups(ctx)).ok(t)), "[A]")
	late := newTrigger(t, s, j1.ID, "A", "late", 10)
	equal(t, "trigger inserted into paused group", late.State, P)
	equal(t, "stored state", get(s.TriggerGet(ctx, late.ID)).ok(t).State, P)
	other := newTrigger(t, s, j1.ID, "C", "other", 10)
	equal(t, "trigger inserted into another group", other.State, W)

	equal(t, "resumed group", get(s.TriggersResume(ctx, store.TriggerSelector{Group: "A"})).ok(t), int64(3))
	equal(t, "paused groups after resume", len(get(s.PausedGroups(ctx)).ok(t)), 0)
	equal(t, "after group resume", newTrigger(t, s, j1.ID, "A", "later", 10).State, W)

	_, err := s.TriggersPause(ctx, store.TriggerSelector{})
	if err == nil {
		t.Fatal("TriggersPause with an empty selector succeeded")
	}
	_, err = s.TriggersPause(ctx, store.TriggerSelector{JobID: j1.ID, Group: "A"})
	if err == nil {
		t.Fatal("TriggersPause with two selectors succeeded")
	}
}

func testPauseAll(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "j")
	a := newTrigger(t, s, j.ID, "A", "a", 10).ID
	done := newTrigger(t, s, j.ID, "A", "done", 10)
	done.State = store.TriggerComplete
	noErr(t, s.TriggerUpdate(ctx, done))

	equal(t, "paused all", get(s.TriggersPause(ctx, store.TriggerSelector{All: true})).ok(t), int64(1))
	equal(t, "complete trigger untouched", get(s.TriggerGet(ctx, done.ID)).ok(t).State, store.TriggerComplete)
	equal(t, "new group while all paused", newTrigger(t, s, j.ID, "new", "n", 10).State, store.TriggerPaused)
	equal(t, "resumed all", get(s.TriggersResume(ctx, store.TriggerSelector{All: true})).ok(t), int64(2))
	equal(t, "state", get(s.TriggerGet(ctx, a)).ok(t).State, store.TriggerWaiting)
	equal(t, "after resume all", newTrigger(t, s, j.ID, "new", "m", 10).State, store.TriggerWaiting)
}

func testLockDueOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "j")
	mk := func(name string, next int64, prio int) int64 {
		tr := &store.Trigger{JobID: j.ID, Group: "g", Name: name, Kind: store.TriggerSimple, NextFireAt: next, Priority: prio}
		noErr(t, s.TriggerInsert(ctx, tr))
		return tr.ID
	}
	late := mk("late", 300, 5)
	lowFirst := mk("low", 100, 1)
	highFirst := mk("high", 100, 10)
	mid := mk("mid", 200, 5)
	mk("future", 10_000, 10)
	paused := mk("paused", 50, 10)
	get(s.TriggersPause(ctx, store.TriggerSelector{TriggerID: paused})).ok(t)

	tx := get(s.Begin(ctx)).ok(t)
	defer tx.Rollback()
	ts := get(tx.TriggersLockDue(ctx, 300, 10)).ok(t)
	equal(t, "due order", fmt.Sprint(ids(ts, triggerID)), fmt.Sprint([]int64{highFirst, lowFirst, mid, late}))
	ts = get(tx.TriggersLockDue(ctx, 300, 2)).ok(t)
	equal(t, "limited", fmt.Sprint(ids(ts, triggerID)), fmt.Sprint([]int64{highFirst, lowFirst}))
}

// testLockDueRace has workers acquire due triggers concurrently, as nodes do: each trigger
// must be fired by exactly one of them.
func testLockDueRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n, workers = 60, 4
	want := newTriggers(t, s, n, 100)
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				tx, err := s.Begin(ctx)
				if err != nil {
					errs <- err
					return
				}
				ts, err := tx.TriggersLockDue(ctx, 100, 7)
				if err != nil || len(ts) == 0 {
					tx.Rollback()
					errs <- err
					return
				}
				us := make([]store.TriggerFireUpdate, len(ts))
				for i, tr := range ts {
					us[i] = store.TriggerFireUpdate{ID: tr.ID, NextFireAt: 1_000_000, PrevFireAt: tr.NextFireAt,
						TimesFired: tr.TimesFired + 1, State: store.TriggerWaiting}
				}
				if _, err := tx.TriggersUpdateAfterFire(ctx, us); err != nil {
					tx.Rollback()
					errs <- err
					return
				}
				if err := tx.Commit(); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got = append(got, ids(ts, triggerID)...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		noErr(t, err)
	}
	sameIDs(t, "fired triggers (a duplicate means two workers fired one trigger)", got, want)
	for _, id := range want {
		equal(t, "times fired", get(s.TriggerGet(ctx, id)).ok(t).TimesFired, int64(1))
	}
}

func testUpdateAfterFire(t *testing.T, s store.Store) {
	ctx := context.Background()
	tids := newTriggers(t, s, 3, 100)
	equal(t, "empty batch", get(s.TriggersUpdateAfterFire(ctx, nil)).ok(t), int64(0))
	n := get(s.TriggersUpdateAfterFire(ctx, []store.TriggerFireUpdate{
		{ID: tids[0], NextFireAt: 200, PrevFireAt: 100, TimesFired: 1, State: store.TriggerWaiting},
		{ID: tids[1], NextFireAt: 0, PrevFireAt: 100, TimesFired: 7, State: store.TriggerComplete},
		{ID: tids[2], NextFireAt: 500, PrevFireAt: 100, TimesFired: 2, State: store.TriggerWaiting,
			Spec: `{"interval_ms":5}`, StartAt: 450},
		{ID: tids[2] + 1000, NextFireAt: 1, State: store.TriggerWaiting}, // gone: not counted
	})).ok(t)
	equal(t, "rows updated", n, int64(3))
	a, b, c := get(s.TriggerGet(ctx, tids[0])).ok(t), get(s.TriggerGet(ctx, tids[1])).ok(t), get(s.TriggerGet(ctx, tids[2])).ok(t)
	if a.NextFireAt != 200 || a.PrevFireAt != 100 || a.TimesFired != 1 || a.State != store.TriggerWaiting || a.Version != 2 {
		t.Fatalf("first trigger after fire: %+v", a)
	}
	if a.Spec != `{"interval_ms":1000}` || a.StartAt != 100 {
		t.Fatalf("empty spec and zero start must keep the stored ones: %+v", a)
	}
	if b.State != store.TriggerComplete || b.NextFireAt != 0 || b.TimesFired != 7 {
		t.Fatalf("completed trigger: %+v", b)
	}
	if c.Spec != `{"interval_ms":5}` || c.StartAt != 450 || c.NextFireAt != 500 {
		t.Fatalf("misfire-rewritten trigger: %+v", c)
	}

	// A batch bigger than one statement's chunk.
	tx := get(s.Begin(ctx)).ok(t)
	many := newTriggers(t, tx, 1100, 7)
	noErr(t, tx.Commit())
	us := make([]store.TriggerFireUpdate, len(many))
	for i, id := range many {
		us[i] = store.TriggerFireUpdate{ID: id, NextFireAt: int64(i + 10_000), TimesFired: 1, State: store.TriggerWaiting}
	}
	equal(t, "big batch updated", get(s.TriggersUpdateAfterFire(ctx, us)).ok(t), int64(len(many)))
	equal(t, "last of big batch", get(s.TriggerGet(ctx, many[len(many)-1])).ok(t).NextFireAt, int64(len(many)-1+10_000))
}

func testCalendars(t *testing.T, s store.Store) {
	ctx := context.Background()
	base := &store.Calendar{Name: "base", Description: "weekends", Spec: `{"weekly":[0,6]}`}
	noErr(t, s.CalendarPut(ctx, base))
	hol := &store.Calendar{Name: "holidays", Spec: `{"dates":[]}`, Base: "base"}
	noErr(t, s.CalendarPut(ctx, hol))
	hol.Spec = `{"dates":["2026-01-01"]}`
	hol.Zone = "America/New_York"
	noErr(t, s.CalendarPut(ctx, hol)) // replaces
	got := get(s.CalendarGet(ctx, "holidays")).ok(t)
	if got.Spec != hol.Spec || got.Base != "base" || got.Zone != "America/New_York" || got.UpdatedAt == 0 {
		t.Fatalf("CalendarGet = %+v", got)
	}
	hol.Zone = "" // back to the trigger's zone
	noErr(t, s.CalendarPut(ctx, hol))
	if got := get(s.CalendarGet(ctx, "holidays")).ok(t); got.Zone != "" {
		t.Fatalf("CalendarGet after clearing the zone = %+v", got)
	}
	wantErr(t, s.CalendarPut(ctx, &store.Calendar{Name: "x", Spec: "{}", Base: "missing"}), store.ErrNotFound)

	var names []string
	after := ""
	for {
		cs := get(s.CalendarList(ctx, after, 1)).ok(t)
		if len(cs) == 0 {
			break
		}
		names = append(names, cs[0].Name)
		after = cs[0].Name
	}
	equal(t, "calendar pages", fmt.Sprint(names), "[base holidays]")

	j := newJob(t, s, "g", "j")
	tr := &store.Trigger{JobID: j.ID, Group: "g", Name: "t", Kind: store.TriggerCron, CalendarName: "holidays"}
	noErr(t, s.TriggerInsert(ctx, tr))
	wantErr(t, s.CalendarDelete(ctx, "holidays"), store.ErrInUse) // a trigger uses it
	wantErr(t, s.CalendarDelete(ctx, "base"), store.ErrInUse)     // a calendar chains onto it
	noErr(t, s.TriggerDelete(ctx, tr.ID))
	noErr(t, s.CalendarDelete(ctx, "holidays"))
	noErr(t, s.CalendarDelete(ctx, "base"))
	_, err := s.CalendarGet(ctx, "base")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.CalendarDelete(ctx, "base"), store.ErrNotFound)
}

// testLockDueSkipsLocked holds a transaction's locks on some due triggers while a second
// transaction acquires. Where acquisitions skip locked rows (PostgreSQL and MySQL: SkipsLocked)
// the second gets only the others, at once, while the first still holds its locks: one that
// waited for them (a plain FOR UPDATE) runs into its deadline and fails the test. SQLite makes
// the second wait for the first to commit; it then gets the others.
func testLockDueSkipsLocked(t *testing.T, s store.Store) {
	ctx := context.Background()
	all := newTriggers(t, s, 6, 100)
	tx1 := get(s.Begin(ctx)).ok(t)
	defer tx1.Rollback()
	first := get(tx1.TriggersLockDue(ctx, 100, 3)).ok(t)
	equal(t, "first batch", len(first), 3)
	advance := func(tx store.Tx, ts []*store.Trigger) {
		t.Helper()
		us := make([]store.TriggerFireUpdate, len(ts))
		for i, tr := range ts {
			us[i] = store.TriggerFireUpdate{ID: tr.ID, NextFireAt: 5000, TimesFired: 1, State: store.TriggerWaiting}
		}
		get(tx.TriggersUpdateAfterFire(ctx, us)).ok(t)
		noErr(t, tx.Commit())
	}

	if sl, ok := s.(interface{ SkipsLocked() bool }); ok && sl.SkipsLocked() {
		// A bound, not a pause: skipping takes no time, waiting lasts until tx1 ends.
		ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		tx2 := get(s.Begin(ctx2)).ok(t)
		defer tx2.Rollback()
		second, err := tx2.TriggersLockDue(ctx2, 100, 10)
		if err != nil {
			t.Fatalf("the second acquisition waited for the first one's locks: %v", err)
		}
		advance(tx2, second)
		advance(tx1, first)
		sameIDs(t, "both batches", append(ids(first, triggerID), ids(second, triggerID)...), all)
		return
	}

	type result struct {
		ids []int64
		err error
	}
	second := make(chan result, 1)
	go func() {
		tx2, err := s.Begin(ctx) // waits for tx1 to end
		if err != nil {
			second <- result{err: err}
			return
		}
		defer tx2.Rollback()
		ts, err := tx2.TriggersLockDue(ctx, 100, 10)
		if err == nil {
			us := make([]store.TriggerFireUpdate, len(ts))
			for i, tr := range ts {
				us[i] = store.TriggerFireUpdate{ID: tr.ID, NextFireAt: 5000, TimesFired: 1, State: store.TriggerWaiting}
			}
			if _, err = tx2.TriggersUpdateAfterFire(ctx, us); err == nil {
				err = tx2.Commit()
			}
		}
		second <- result{ids(ts, triggerID), err}
	}()
	advance(tx1, first)
	r := <-second
	noErr(t, r.err)
	sameIDs(t, "both batches", append(ids(first, triggerID), r.ids...), all)
}

// testPauseReturnsAcquiredFires: pausing a trigger hands back the fires a node acquired ahead
// of time and has not started, and rewinds the trigger to the first of them; what already
// runs, and other triggers' fires, stay.
func testPauseReturnsAcquiredFires(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "j")
	paused, other := newTrigger(t, s, j.ID, "g", "paused", 1000), newTrigger(t, s, j.ID, "g", "other", 1000)
	exec := func(trigger, at int64, cause store.ExecutionCause, attempt int) *store.Execution {
		return &store.Execution{JobID: j.ID, TriggerID: trigger, ScheduledAt: at, Cause: cause, Attempt: attempt,
			Node: "n1", State: store.ExecAcquired}
	}
	running := exec(paused.ID, 1000, store.CauseSchedule, 0)
	ahead1, ahead2 := exec(paused.ID, 2000, store.CauseSchedule, 0), exec(paused.ID, 3000, store.CauseMisfire, 0)
	retry := exec(paused.ID, 1500, store.CauseRetry, 1)
	otherFire := exec(other.ID, 2000, store.CauseSchedule, 0)
	get(s.ExecutionsInsert(ctx, []*store.Execution{running, ahead1, ahead2, retry, otherFire})).ok(t)
	equal(t, "started", len(get(s.ExecutionsMarkRunning(ctx, own("n1"), []int64{running.ID}, 1000)).ok(t)), 1)
	// The node had advanced the trigger past the fires it acquired.
	_, err := s.TriggersUpdateAfterFire(ctx, []store.TriggerFireUpdate{{ID: paused.ID, NextFireAt: 4000, PrevFireAt: 3000,
		TimesFired: 3, State: store.TriggerWaiting}})
	noErr(t, err)

	equal(t, "paused", get(s.TriggersPause(ctx, store.TriggerSelector{TriggerID: paused.ID})).ok(t), int64(1))
	tr := get(s.TriggerGet(ctx, paused.ID)).ok(t)
	equal(t, "rewound next fire", tr.NextFireAt, int64(2000))
	equal(t, "times fired without the returned fires", tr.TimesFired, int64(1))
	for _, x := range []*store.Execution{ahead1, ahead2} {
		wantErr(t, func() error { _, err := s.ExecutionGet(ctx, x.ID); return err }(), store.ErrNotFound)
	}
	equal(t, "a returned fire cannot start", len(get(s.ExecutionsMarkRunning(ctx, own("n1"), []int64{ahead1.ID, ahead2.ID}, 2000)).ok(t)), 0)
	equal(t, "running fire stays", get(s.ExecutionGet(ctx, running.ID)).ok(t).State, store.ExecRunning)
	equal(t, "retry stays", get(s.ExecutionGet(ctx, retry.ID)).ok(t).State, store.ExecAcquired)
	equal(t, "other trigger's fire stays", get(s.ExecutionGet(ctx, otherFire.ID)).ok(t).State, store.ExecAcquired)
	equal(t, "other trigger untouched", get(s.TriggerGet(ctx, other.ID)).ok(t).NextFireAt, int64(1000))
}

// testTriggerParamsData checks that a trigger's own params and data (Quartz's trigger
// JobDataMap) are kept by every read the engine and the API use, and replaced by an update.
func testTriggerParamsData(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "j")
	tr := &store.Trigger{JobID: j.ID, Group: "tg", Name: "with-data", Description: "nightly, EU only",
		Kind: store.TriggerCron, Spec: `{"expr":"0 * * * * ?"}`, MisfirePolicy: "smart", NextFireAt: 60_000,
		Params: "--region eu", Data: map[string]any{"region": "eu", "batch": 500.0, "dry": true}}
	noErr(t, s.TriggerInsert(ctx, tr))
	plain := newTrigger(t, s, j.ID, "tg", "plain", 60_000)

	got := get(s.TriggerGet(ctx, tr.ID)).ok(t)
	if !reflect.DeepEqual(got, tr) {
		t.Fatalf("TriggerGet = %+v, want %+v", got, tr)
	}
	listed := get(s.TriggerList(ctx, store.TriggerFilter{JobID: j.ID})).ok(t)
	due := get(s.TriggersLockDue(ctx, 60_000, 10)).ok(t)
	for what, ts := range map[string][]*store.Trigger{"TriggerList": listed, "TriggersLockDue": due} {
		if len(ts) != 2 {
			t.Fatalf("%s: %d triggers, want 2", what, len(ts))
		}
		for _, x := range ts {
			switch x.ID {
			case tr.ID:
				if x.Params != tr.Params || !reflect.DeepEqual(x.Data, tr.Data) || x.Description != tr.Description {
					t.Errorf("%s: params %q data %v description %q, want %q %v %q", what, x.Params, x.Data, x.Description, tr.Params, tr.Data, tr.Description)
				}
			case plain.ID:
				if x.Params != "" || x.Data != nil {
					t.Errorf("%s: a trigger without params or data reads back %q %v", what, x.Params, x.Data)
				}
			}
		}
	}

	got.Params, got.Data = "", map[string]any{"region": "us"}
	noErr(t, s.TriggerUpdate(ctx, got))
	again := get(s.TriggerGet(ctx, tr.ID)).ok(t)
	if again.Params != "" || !reflect.DeepEqual(again.Data, map[string]any{"region": "us"}) {
		t.Fatalf("after TriggerUpdate: params %q data %v", again.Params, again.Data)
	}
	again.Data = nil
	noErr(t, s.TriggerUpdate(ctx, again))
	if x := get(s.TriggerGet(ctx, tr.ID)).ok(t); x.Data != nil {
		t.Fatalf("data cleared by TriggerUpdate reads back %v", x.Data)
	}
}

// testFireQuota: an app's fire-rate state starts empty, and workers that each lock it, read
// it and write it back in one transaction never lose one another's writes (the lock
// serializes them across connections, as across nodes).
func testFireQuota(t *testing.T, s store.Store) {
	ctx := context.Background()
	noErr(t, s.FireQuotaTake(ctx, []string{"b", "a", "b", ""}, func(got map[string]string) map[string]string {
		if len(got) != 3 || got["a"] != "" || got["b"] != "" || got[""] != "" {
			t.Errorf("fresh quota states %q, want a, b and \"\" empty", got)
		}
		return nil
	}))
	const workers, rounds = 4, 10
	// Each worker's takes, one after another; the workers at once.
	takes := make(chan error, workers*rounds)
	for range workers {
		go func() {
			for range rounds {
				takes <- s.FireQuotaTake(ctx, []string{"b", "a"}, func(st map[string]string) map[string]string {
					next := map[string]string{}
					for _, app := range []string{"a", "b"} {
						n, _ := strconv.Atoi(st[app]) // "" is 0
						next[app] = strconv.Itoa(n + 1)
					}
					return next
				})
			}
		}()
	}
	for range workers * rounds {
		noErr(t, <-takes)
	}
	want := strconv.Itoa(workers * rounds)
	noErr(t, s.FireQuotaTake(ctx, []string{"a", "b"}, func(got map[string]string) map[string]string {
		if got["a"] != want || got["b"] != want {
			t.Errorf("after %d locked increments: states %q, want %s each (a lost update)", workers*rounds, got, want)
		}
		return nil
	}))
}
