package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// testJobsFilter checks the console's job search: name substring without case (LIKE's
// wildcards taken literally), app, handler and trigger state, alone and together.
func testJobsFilter(t *testing.T, s store.Store) {
	ctx := context.Background()
	mk := func(name, app, handler string) *store.Job {
		j := &store.Job{Group: "g", Name: name, TargetKind: store.TargetLocal, Handler: handler, App: app, Enabled: true}
		if app != "" {
			j.TargetKind = store.TargetRemote
		}
		noErr(t, s.JobInsert(ctx, j))
		return j
	}
	invoice := mk("Monthly-Invoice", "billing", "invoice")
	report := mk("invoice_report", "billing", "report")
	percent := mk("100%-done", "", "noop")
	plain := mk("cleanup", "", "noop")
	paused := newTrigger(t, s, report.ID, "g", "report-t", 1000)
	newTrigger(t, s, plain.ID, "g", "cleanup-t", 1000)
	_, err := s.TriggersPause(ctx, store.TriggerSelector{TriggerID: paused.ID})
	noErr(t, err)
	for _, tc := range []struct {
		f    store.JobFilter
		want []int64
	}{
		{store.JobFilter{NameContains: "INVOICE"}, []int64{invoice.ID, report.ID}},
		{store.JobFilter{NameContains: "e_r"}, []int64{report.ID}},
		{store.JobFilter{NameContains: "%"}, []int64{percent.ID}},
		{store.JobFilter{NameContains: "!"}, nil},
		{store.JobFilter{App: "billing"}, []int64{invoice.ID, report.ID}},
		{store.JobFilter{Handler: "noop"}, []int64{percent.ID, plain.ID}},
		{store.JobFilter{TriggerState: store.TriggerPaused}, []int64{report.ID}},
		{store.JobFilter{TriggerState: store.TriggerWaiting}, []int64{plain.ID}},
		{store.JobFilter{App: "billing", NameContains: "month"}, []int64{invoice.ID}},
		{store.JobFilter{Handler: "noop", AfterID: percent.ID}, []int64{plain.ID}},
	} {
		got := ids(get(s.JobList(ctx, tc.f)).ok(t), jobID)
		equal(t, fmt.Sprintf("JobList(%+v)", tc.f), fmt.Sprint(got), fmt.Sprint(tc.want))
	}
}

// testTriggersByNextFire checks the list of next fires across jobs: by time, then id.
func testTriggersByNextFire(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "j")
	late := newTrigger(t, s, j.ID, "g", "late", 3000)
	early := newTrigger(t, s, j.ID, "g", "early", 1000)
	tie := newTrigger(t, s, j.ID, "g", "tie", 3000)
	gone := newTrigger(t, s, j.ID, "g", "paused", 500)
	_, err := s.TriggersPause(ctx, store.TriggerSelector{TriggerID: gone.ID})
	noErr(t, err)
	got := get(s.TriggerList(ctx, store.TriggerFilter{State: store.TriggerWaiting, ByNextFire: true, Limit: 3})).ok(t)
	equal(t, "next fires", fmt.Sprint(ids(got, triggerID)), fmt.Sprint([]int64{early.ID, late.ID, tie.ID}))
	got = get(s.TriggerList(ctx, store.TriggerFilter{State: store.TriggerWaiting, ByNextFire: true, Limit: 1})).ok(t)
	equal(t, "first next fire", fmt.Sprint(ids(got, triggerID)), fmt.Sprint([]int64{early.ID}))
}

// testExecutionsByCause checks the executions list's cause filter, live and ended alike.
func testExecutionsByCause(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "j")
	xs := []*store.Execution{
		{JobID: j.ID, ScheduledAt: 1000, Cause: store.CauseManual, State: store.ExecPending},
		{JobID: j.ID, ScheduledAt: 2000, FiredAt: 2000, FinishedAt: 2100, Cause: store.CauseRetry, Attempt: 1, State: store.ExecFailed},
		{JobID: j.ID, ScheduledAt: 3000, FiredAt: 3000, FinishedAt: 3100, Cause: store.CauseManual, State: store.ExecSucceeded},
		{JobID: j.ID, ScheduledAt: 4000, Cause: store.CauseRetry, Attempt: 1, State: store.ExecPending},
	}
	_, err := s.ExecutionsInsert(ctx, xs)
	noErr(t, err)
	for _, tc := range []struct {
		f    store.ExecutionFilter
		want []int64
	}{
		{store.ExecutionFilter{Cause: store.CauseManual}, []int64{xs[0].ID, xs[2].ID}},
		{store.ExecutionFilter{Cause: store.CauseRetry, Desc: true}, []int64{xs[3].ID, xs[1].ID}},
		{store.ExecutionFilter{Cause: store.CauseRetry, State: store.ExecFailed}, []int64{xs[1].ID}},
		{store.ExecutionFilter{Cause: store.CauseChild}, nil},
	} {
		got := get(s.ExecutionList(ctx, tc.f)).ok(t)
		ids := make([]int64, len(got))
		for i, x := range got {
			ids[i] = x.ID
		}
		equal(t, fmt.Sprintf("ExecutionList(%+v)", tc.f), fmt.Sprint(ids), fmt.Sprint(tc.want))
	}
}
