package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

func testReports(t *testing.T, s store.Store) {
	ctx := context.Background()
	day := time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) int64 { return day.Add(d).UnixMilli() }
	var es []*store.Execution
	mk := func(job int64, state store.ExecutionState, scheduled, fired int64) {
		es = append(es, &store.Execution{JobID: job, ScheduledAt: scheduled, FiredAt: fired, Cause: store.CauseAPI, State: state})
	}
	for _, st := range []store.ExecutionState{store.ExecSucceeded, store.ExecSucceeded, store.ExecFailed, store.ExecTimedOut,
		store.ExecLost, store.ExecRunning, store.ExecSkipped} {
		mk(1, st, at(time.Hour), at(time.Hour))
	}
	mk(1, store.ExecSucceeded, at(-time.Minute), at(-time.Minute))   // the day before
	mk(1, store.ExecSucceeded, at(-time.Minute), at(24*time.Hour-1)) // due the day before, fired in its last ms
	mk(1, store.ExecPending, at(23*time.Hour), 0)                    // due today, not fired yet
	mk(1, store.ExecPending, at(24*time.Hour), 0)                    // due tomorrow
	mk(2, store.ExecCanceled, at(2*time.Hour), at(2*time.Hour))
	mk(2, store.ExecSucceeded, at(3*time.Hour), at(3*time.Hour))
	mk(3, store.ExecSucceeded, at(24*time.Hour), at(24*time.Hour)) // tomorrow, first ms
	get(s.ExecutionsInsert(ctx, es)).ok(t)

	equal(t, "rows of the day", get(s.ReportsRefresh(ctx, "2024-03-10")).ok(t), 2)
	equal(t, "rows of the day before", get(s.ReportsRefresh(ctx, "2024-03-09")).ok(t), 1)
	show := func(rs []*store.ReportDay) string {
		out := ""
		for _, r := range rs {
			out += fmt.Sprintf("%s job %d: running %d succeeded %d failed %d other %d; ", r.Day, r.JobID, r.Running, r.Succeeded, r.Failed, r.Other)
		}
		return out
	}
	equal(t, "job 1", show(get(s.ReportsDaily(ctx, "2024-03-10", "2024-03-10", 1, nil)).ok(t)),
		"2024-03-10 job 1: running 2 succeeded 3 failed 3 other 1; ")
	equal(t, "every job, two days", show(get(s.ReportsDaily(ctx, "2024-03-01", "2024-03-31", 0, nil)).ok(t)),
		"2024-03-09 job 0: running 0 succeeded 1 failed 0 other 0; 2024-03-10 job 0: running 2 succeeded 4 failed 3 other 2; ")
	equal(t, "a day not refreshed", len(get(s.ReportsDaily(ctx, "2024-03-11", "2024-03-11", 0, nil)).ok(t)), 0)

	// Refreshing is idempotent, and a job whose executions are gone loses its row.
	equal(t, "rows again", get(s.ReportsRefresh(ctx, "2024-03-10")).ok(t), 2)
	get(s.ExecutionsDeleteFiredBefore(ctx, at(24*time.Hour), 100)).ok(t)
	equal(t, "rows after retention", get(s.ReportsRefresh(ctx, "2024-03-10")).ok(t), 1)
	equal(t, "job 1 after retention", show(get(s.ReportsDaily(ctx, "2024-03-10", "2024-03-10", 0, nil)).ok(t)),
		"2024-03-10 job 0: running 2 succeeded 0 failed 0 other 0; ")
	equal(t, "job 2 after retention", len(get(s.ReportsDaily(ctx, "2024-03-10", "2024-03-10", 2, nil)).ok(t)), 0)
	// A day whose executions are all gone has no rows, its total included.
	equal(t, "rows of the day before after retention", get(s.ReportsRefresh(ctx, "2024-03-09")).ok(t), 0)
	equal(t, "every job the day before after retention", len(get(s.ReportsDaily(ctx, "2024-03-09", "2024-03-09", 0, nil)).ok(t)), 0)

	if _, err := s.ReportsRefresh(ctx, "10/03/2024"); err == nil {
		t.Fatal("ReportsRefresh accepted a day that is not YYYY-MM-DD")
	}
	if _, err := s.ReportsDaily(ctx, "2024-03-01", "March", 0, nil); err == nil {
		t.Fatal("ReportsDaily accepted a day that is not YYYY-MM-DD")
	}
}

// testReportsScope: a scoped reader's report counts only the jobs it may see (its apps and no
// app): its totals are summed from those jobs' rows, never the day's total row over every
// app, and another app's job reads as no rows.
func testReportsScope(t *testing.T, s store.Store) {
	ctx := context.Background()
	mk := func(name, app string) *store.Job {
		j := &store.Job{Group: "g", Name: name, TargetKind: store.TargetRemote, Handler: "h", App: app, Enabled: true}
		if app == "" {
			j.TargetKind = store.TargetLocal
		}
		noErr(t, s.JobInsert(ctx, j))
		return j
	}
	alpha, beta, local := mk("a", "alpha"), mk("b", "beta"), mk("l", "")
	at := time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC).UnixMilli()
	var es []*store.Execution
	for _, x := range []struct {
		job   int64
		state store.ExecutionState
	}{{alpha.ID, store.ExecSucceeded}, {alpha.ID, store.ExecSucceeded}, {beta.ID, store.ExecFailed},
		{beta.ID, store.ExecFailed}, {beta.ID, store.ExecSucceeded}, {local.ID, store.ExecSkipped}} {
		es = append(es, &store.Execution{JobID: x.job, ScheduledAt: at, FiredAt: at, Cause: store.CauseAPI, State: x.state})
	}
	get(s.ExecutionsInsert(ctx, es)).ok(t)
	get(s.ReportsRefresh(ctx, "2024-03-10")).ok(t)
	show := func(rs []*store.ReportDay) string {
		out := ""
		for _, r := range rs {
			out += fmt.Sprintf("%s: succeeded %d failed %d other %d; ", r.Day, r.Succeeded, r.Failed, r.Other)
		}
		return out
	}
	alphaScope := []string{"alpha"}
	equal(t, "every app", show(get(s.ReportsDaily(ctx, "2024-03-01", "2024-03-31", 0, nil)).ok(t)),
		"2024-03-10: succeeded 3 failed 2 other 1; ")
	equal(t, "alpha and no app", show(get(s.ReportsDaily(ctx, "2024-03-01", "2024-03-31", 0, alphaScope)).ok(t)),
		"2024-03-10: succeeded 2 failed 0 other 1; ")
	equal(t, "alpha's job", show(get(s.ReportsDaily(ctx, "2024-03-01", "2024-03-31", alpha.ID, alphaScope)).ok(t)),
		"2024-03-10: succeeded 2 failed 0 other 0; ")
	equal(t, "beta's job read in alpha's scope", len(get(s.ReportsDaily(ctx, "2024-03-01", "2024-03-31", beta.ID, alphaScope)).ok(t)), 0)
	equal(t, "a scope without jobs: no app's", show(get(s.ReportsDaily(ctx, "2024-03-01", "2024-03-31", 0, []string{"gamma"})).ok(t)),
		"2024-03-10: succeeded 0 failed 0 other 1; ")
}
