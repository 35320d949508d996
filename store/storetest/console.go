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
		{store.JobFilter{NamePrefix: "INVOICE"}, []int64{report.ID}},
		{store.JobFilter{NamePrefix: "100%"}, []int64{percent.ID}},
		{store.JobFilter{NamePrefix: "_"}, nil},
		{store.JobFilter{NamePrefix: "invoice", NameContains: "month"}, nil},
		// A scope keeps its apps' jobs and those of no app, which every reader sees.
		{store.JobFilter{Scope: []string{"billing"}}, []int64{invoice.ID, report.ID, percent.ID, plain.ID}},
		{store.JobFilter{Scope: []string{"reports"}}, []int64{percent.ID, plain.ID}},
		{store.JobFilter{Scope: []string{"reports"}, App: "billing"}, nil},
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
	billing := &store.Job{Group: "g", Name: "billing", TargetKind: store.TargetRemote, App: "billing", Handler: "h", Enabled: true}
	noErr(t, s.JobInsert(ctx, billing))
	first := newTrigger(t, s, billing.ID, "g", "billing-first", 100)
	for _, tc := range []struct {
		scope []string
		want  []int64
	}{
		{nil, []int64{first.ID, early.ID}},
		{[]string{"billing"}, []int64{first.ID, early.ID}},
		{[]string{"reports"}, []int64{early.ID, late.ID}},
	} {
		got = get(s.TriggerList(ctx, store.TriggerFilter{State: store.TriggerWaiting, ByNextFire: true, Limit: 2, Scope: tc.scope})).ok(t)
		equal(t, fmt.Sprintf("next fires in scope %q", tc.scope), fmt.Sprint(ids(got, triggerID)), fmt.Sprint(tc.want))
	}
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

// testJobsByPausedAndFailing checks the job list's paused and failing filters. Paused is a
// trigger paused and none waiting. Failing reads the newest ended run that ran, so a failure
// followed by a success is not failing, and a skipped fire after a failure leaves the job
// failing.
func testJobsByPausedAndFailing(t *testing.T, s store.Store) {
	ctx := context.Background()
	healed := newJob(t, s, "g", "healed")
	broken := newJob(t, s, "g", "broken")
	lost := newJob(t, s, "g", "lost")
	fresh := newJob(t, s, "g", "fresh")
	ended := func(job int64, at int64, st store.ExecutionState) *store.Execution {
		return &store.Execution{JobID: job, ScheduledAt: at, FiredAt: at, FinishedAt: at + 1, Cause: store.CauseManual, State: st}
	}
	_, err := s.ExecutionsInsert(ctx, []*store.Execution{
		ended(healed.ID, 1000, store.ExecFailed), ended(healed.ID, 2000, store.ExecSucceeded),
		ended(broken.ID, 1000, store.ExecSucceeded), ended(broken.ID, 2000, store.ExecTimedOut), ended(broken.ID, 3000, store.ExecSkipped),
		ended(lost.ID, 1000, store.ExecLost),
		// A run in flight is not an ended one: fresh has never ended a run.
		{JobID: fresh.ID, ScheduledAt: 1000, Cause: store.CauseManual, State: store.ExecPending},
	})
	noErr(t, err)
	// healed: one trigger, paused. broken: one paused, one waiting (still fires). lost: none.
	pause := func(tr *store.Trigger) {
		_, err := s.TriggersPause(ctx, store.TriggerSelector{TriggerID: tr.ID})
		noErr(t, err)
	}
	pause(newTrigger(t, s, healed.ID, "g", "healed-t", 1000))
	pause(newTrigger(t, s, broken.ID, "g", "broken-paused", 1000))
	newTrigger(t, s, broken.ID, "g", "broken-waiting", 1000)
	for _, tc := range []struct {
		f    store.JobFilter
		want []int64
	}{
		{store.JobFilter{Failing: true}, []int64{broken.ID, lost.ID}},
		{store.JobFilter{Paused: true}, []int64{healed.ID}},
		{store.JobFilter{TriggerState: store.TriggerPaused}, []int64{healed.ID, broken.ID}},
		{store.JobFilter{Failing: true, AfterID: broken.ID}, []int64{lost.ID}},
		{store.JobFilter{Failing: true, Paused: true}, nil},
	} {
		got := ids(get(s.JobList(ctx, tc.f)).ok(t), jobID)
		equal(t, fmt.Sprintf("JobList(%+v)", tc.f), fmt.Sprint(got), fmt.Sprint(tc.want))
	}
}

// testExecutionsByAppAndExecutor checks the executions list's app and executor filters,
// live and ended alike.
func testExecutionsByAppAndExecutor(t *testing.T, s store.Store) {
	ctx := context.Background()
	remote := &store.Job{Group: "g", Name: "remote", TargetKind: store.TargetRemote, App: "billing", Handler: "h", Enabled: true}
	noErr(t, s.JobInsert(ctx, remote))
	local := newJob(t, s, "g", "local")
	xs := []*store.Execution{
		{JobID: remote.ID, ScheduledAt: 1000, FiredAt: 1000, FinishedAt: 1100, Cause: store.CauseManual, State: store.ExecSucceeded,
			ExecutorAddress: "http://10.0.0.1:9999"},
		{JobID: local.ID, ScheduledAt: 2000, FiredAt: 2000, FinishedAt: 2100, Cause: store.CauseManual, State: store.ExecFailed},
		{JobID: remote.ID, ScheduledAt: 3000, Cause: store.CauseManual, State: store.ExecPending},
		{JobID: remote.ID, ScheduledAt: 4000, FiredAt: 4000, FinishedAt: 4100, Cause: store.CauseManual, State: store.ExecFailed,
			ExecutorAddress: "http://10.0.0.2:9999"},
	}
	_, err := s.ExecutionsInsert(ctx, xs)
	noErr(t, err)
	for _, tc := range []struct {
		f    store.ExecutionFilter
		want []int64
	}{
		{store.ExecutionFilter{App: "billing"}, []int64{xs[0].ID, xs[2].ID, xs[3].ID}},
		{store.ExecutionFilter{App: "billing", State: store.ExecFailed}, []int64{xs[3].ID}},
		{store.ExecutionFilter{App: "none"}, nil},
		{store.ExecutionFilter{ExecutorAddress: "http://10.0.0.1:9999"}, []int64{xs[0].ID}},
		{store.ExecutionFilter{App: "billing", Desc: true, AfterID: xs[3].ID, Limit: 1}, []int64{xs[2].ID}},
		{store.ExecutionFilter{Scope: []string{"billing"}}, []int64{xs[0].ID, xs[1].ID, xs[2].ID, xs[3].ID}},
		{store.ExecutionFilter{Scope: []string{"reports"}}, []int64{xs[1].ID}},
		{store.ExecutionFilter{Scope: []string{}, Desc: true, Limit: 1}, []int64{xs[1].ID}},
	} {
		got := ids(get(s.ExecutionList(ctx, tc.f)).ok(t), func(x *store.Execution) int64 { return x.ID })
		equal(t, fmt.Sprintf("ExecutionList(%+v)", tc.f), fmt.Sprint(got), fmt.Sprint(tc.want))
	}
}
