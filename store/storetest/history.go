package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// testHistoryPartitions: the history's day partitions (PostgreSQL) are created ahead, take
// the rows of their day that the default partition held, and are dropped by retention only
// when every row in them was fired before the horizon; the lists read across days, their
// keyset pages stable; the rows at the horizon stay. On the other databases the partition
// calls do nothing and retention's batches alone give the same history.
func testHistoryPartitions(t *testing.T, s store.Store) {
	ctx := context.Background()
	day := time.Date(2030, 1, 10, 0, 0, 0, 0, time.UTC).UnixMilli()
	const dayMs = int64(24 * time.Hour / time.Millisecond)
	partitioned := len(get(s.HistoryPartitions(ctx)).ok(t)) > 0

	// A row of a day with no partition yet goes to the default partition, and moves into its
	// day's partition when that is created.
	j := newJob(t, s, "g", "history")
	early := &store.Execution{JobID: j.ID, ScheduledAt: day + 3*dayMs + 5, FiredAt: day + 3*dayMs + 5,
		Cause: store.CauseAPI, State: store.ExecSucceeded}
	get(s.ExecutionsInsert(ctx, []*store.Execution{early})).ok(t)
	created := get(s.HistoryPartitionsEnsure(ctx, day+12*int64(time.Hour/time.Millisecond), 3)).ok(t)
	days := func() map[string]bool {
		m := map[string]bool{}
		for _, p := range get(s.HistoryPartitions(ctx)).ok(t) {
			m[p.Day] = true
			equal(t, "partition span of "+p.Day, p.To-p.From, dayMs)
		}
		return m
	}
	if partitioned {
		equal(t, "created ahead", fmt.Sprint(created), "[2030-01-10 2030-01-11 2030-01-12 2030-01-13]")
		have := days()
		for _, d := range created {
			equal(t, "partition "+d+" listed", have[d], true)
		}
		equal(t, "created again", len(get(s.HistoryPartitionsEnsure(ctx, day, 3)).ok(t)), 0)
	} else {
		equal(t, "partitions created without partitioning", len(created), 0)
	}
	equal(t, "row moved out of the default partition", get(s.ExecutionGet(ctx, early.ID)).ok(t).ScheduledAt, early.ScheduledAt)

	// Rows on both sides of each day boundary, of two states, one job and another; one fire
	// of day 0 that ended (fired) on day 3, as a catch-up or a backfill may.
	other := newJob(t, s, "g", "history-other")
	var xs []*store.Execution
	add := func(job int64, scheduled, fired int64, st store.ExecutionState) *store.Execution {
		x := &store.Execution{JobID: job, ScheduledAt: scheduled, FiredAt: fired, Cause: store.CauseAPI, State: st}
		xs = append(xs, x)
		return x
	}
	for d := int64(0); d < 4; d++ {
		for _, off := range []int64{0, 1, dayMs / 2, dayMs - 1} {
			at := day + d*dayMs + off
			add(j.ID, at, at, store.ExecSucceeded)
			add(other.ID, at, at, store.ExecFailed)
		}
	}
	late := add(j.ID, day+7, day+3*dayMs+9, store.ExecSucceeded)
	get(s.ExecutionsInsert(ctx, xs)).ok(t)
	xs = append(xs, early)

	list := func(f store.ExecutionFilter, size int) []int64 {
		var got []int64
		f.Limit = size
		for {
			page := get(s.ExecutionList(ctx, f)).ok(t)
			for _, x := range page {
				got = append(got, x.ID)
			}
			if len(page) < size {
				return got
			}
			f.AfterID = page[len(page)-1].ID
		}
	}
	want := func(keep func(x *store.Execution) bool, byFired, desc bool) []int64 {
		var in []*store.Execution
		for _, x := range xs {
			if keep(x) {
				in = append(in, x)
			}
		}
		slices.SortFunc(in, func(a, b *store.Execution) int {
			c := cmp.Compare(a.ID, b.ID)
			if byFired {
				c = cmp.Or(cmp.Compare(a.FiredAt, b.FiredAt), c)
			}
			if desc {
				return -c
			}
			return c
		})
		return ids(in, executionID)
	}
	check := func(what string) {
		t.Helper()
		for _, desc := range []bool{false, true} {
			for _, size := range []int{3, 100} {
				name := fmt.Sprintf("%s desc=%v page=%d", what, desc, size)
				equal(t, name+": by job", fmt.Sprint(list(store.ExecutionFilter{JobID: j.ID, Desc: desc}, size)),
					fmt.Sprint(want(func(x *store.Execution) bool { return x.JobID == j.ID }, false, desc)))
				equal(t, name+": by state", fmt.Sprint(list(store.ExecutionFilter{State: store.ExecFailed, Desc: desc}, size)),
					fmt.Sprint(want(func(x *store.Execution) bool { return x.State == store.ExecFailed }, false, desc)))
				from, to := day+dayMs-1, day+3*dayMs+1 // from the last instant of day 0 into day 3
				equal(t, name+": by fired range", fmt.Sprint(list(store.ExecutionFilter{FiredFrom: from, FiredTo: to, Desc: desc}, size)),
					fmt.Sprint(want(func(x *store.Execution) bool { return x.FiredAt >= from && x.FiredAt < to }, true, desc)))
			}
		}
	}
	check("before retention")

	// Retention at the start of day 2: day 1 goes whole (a partition dropped), day 0 holds
	// the late fire so its partition stays and its other rows go in batches; the rows at the
	// horizon's instant stay.
	horizon := day + 2*dayMs
	gone := xs[:0:0]
	for _, x := range xs {
		if x.FiredAt < horizon {
			gone = append(gone, x)
		}
	}
	var d1 *store.Execution
	for _, x := range xs {
		if x.ScheduledAt == day+dayMs+dayMs/2 {
			d1 = x
			break
		}
	}
	get(s.ExecutionLogAppend(ctx, d1.ID, []store.LogLine{{Line: 1, Message: "day 1"}})).ok(t)
	droppedDays, droppedRows, err := s.HistoryDropPartitions(ctx, horizon)
	noErr(t, err)
	if partitioned {
		equal(t, "day 1 dropped", slices.Contains(droppedDays, "2030-01-11"), true)
		equal(t, "day 0 (late fire) kept", slices.Contains(droppedDays, "2030-01-10"), false)
		equal(t, "rows dropped with day 1", droppedRows, int64(8))
		have := days()
		equal(t, "day 0 partition", have["2030-01-10"], true)
		equal(t, "day 1 partition", have["2030-01-11"], false)
		equal(t, "day 2 partition", have["2030-01-12"], true)
	} else {
		equal(t, "partitions dropped without partitioning", len(droppedDays), 0)
	}
	deleted := droppedRows
	for {
		n := get(s.ExecutionsDeleteFiredBefore(ctx, horizon, 5)).ok(t)
		deleted += n
		if n < 5 {
			break
		}
	}
	equal(t, "deleted", deleted, int64(len(gone)))
	equal(t, "logs of a dropped day", len(get(s.ExecutionLogList(ctx, d1.ID, 0, 10)).ok(t)), 0)
	kept := xs[:0:0]
	for _, x := range xs {
		_, err := s.ExecutionGet(ctx, x.ID)
		if x.FiredAt < horizon {
			wantErr(t, err, store.ErrNotFound)
			continue
		}
		noErr(t, err)
		kept = append(kept, x)
	}
	equal(t, "late fire kept", slices.Contains(kept, late), true)
	xs = kept
	check("after retention")

	// Retention at the start of day 3, a row of day 2 with its alarm still to be sent: the
	// partition stays, and the row with it, until the alarm is delivered.
	horizon = day + 3*dayMs
	var alarmed *store.Execution
	for _, x := range xs {
		if x.FiredAt >= day+2*dayMs && x.FiredAt < horizon {
			alarmed = x
			break
		}
	}
	sameIDs(t, "alarm raised", get(s.ExecutionsSetAlarm(ctx, []int64{alarmed.ID}, store.AlarmNone, store.AlarmPending)).ok(t), []int64{alarmed.ID})
	retain := func() {
		t.Helper()
		droppedDays, _, err := s.HistoryDropPartitions(ctx, horizon)
		noErr(t, err)
		equal(t, "day 2 dropped", slices.Contains(droppedDays, "2030-01-12"), partitioned && alarmed.AlarmState == store.AlarmSent)
		for get(s.ExecutionsDeleteFiredBefore(ctx, horizon, 5)).ok(t) == 5 {
		}
	}
	retain()
	equal(t, "row with a pending alarm kept", get(s.ExecutionGet(ctx, alarmed.ID)).ok(t).AlarmState, store.AlarmPending)
	if partitioned {
		equal(t, "day 2 partition kept for the alarm", days()["2030-01-12"], true)
	}
	for _, x := range xs {
		if x.FiredAt < horizon && x.ID != alarmed.ID {
			_, err := s.ExecutionGet(ctx, x.ID)
			wantErr(t, err, store.ErrNotFound)
		}
	}
	sameIDs(t, "alarm claimed", get(s.ExecutionsSetAlarm(ctx, []int64{alarmed.ID}, store.AlarmPending, store.AlarmSending)).ok(t), []int64{alarmed.ID})
	retain()
	equal(t, "row with an alarm being sent kept", get(s.ExecutionGet(ctx, alarmed.ID)).ok(t).AlarmState, store.AlarmSending)
	sameIDs(t, "alarm sent", get(s.ExecutionsSetAlarm(ctx, []int64{alarmed.ID}, store.AlarmSending, store.AlarmSent)).ok(t), []int64{alarmed.ID})
	alarmed.AlarmState = store.AlarmSent
	retain()
	_, err = s.ExecutionGet(ctx, alarmed.ID)
	wantErr(t, err, store.ErrNotFound)
	if partitioned {
		equal(t, "day 2 partition once the alarm was sent", days()["2030-01-12"], false)
	}
}
