package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

func testJobs(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := &store.Job{Group: "billing", Name: "invoice", Description: "monthly", TargetKind: store.TargetRemote,
		Handler: "invoiceHandler", App: "billing-app", Params: "--all", Data: map[string]any{"k": "v", "n": 1.5},
		Concurrency: store.ConcurrencyAtMost, MaxConcurrent: 7, PauseAfterFailures: 4, PersistData: true, RequestsRecovery: true, TimeoutMs: 30000,
		MaxRetries: 3, RetryBackoffMs: 500, DispatchTimeoutMs: 15000, Routing: "round_robin", AlarmTargets: []string{"ops@example.com"},
		AlarmPolicy: store.AlarmPolicy{Threshold: 3, WindowMs: 60000, SilenceMs: 120000, Recovery: true},
		ChildJobIDs: []int64{7, 8}, Enabled: true, ParamsSecret: true}
	noErr(t, s.JobInsert(ctx, j))
	if j.ID == 0 || j.CreatedAt == 0 || j.UpdatedAt != j.CreatedAt {
		t.Fatalf("inserted job: id %d created %d updated %d", j.ID, j.CreatedAt, j.UpdatedAt)
	}
	got := get(s.JobGet(ctx, j.ID)).ok(t)
	if !reflect.DeepEqual(got, j) {
		t.Fatalf("JobGet = %+v, want %+v", got, j)
	}
	got = get(s.JobGetByKey(ctx, "billing", "invoice")).ok(t)
	equal(t, "JobGetByKey id", got.ID, j.ID)
	second := newJob(t, s, "billing", "second")
	many := get(s.JobsGet(ctx, []int64{second.ID, j.ID, j.ID + second.ID + 1000})).ok(t)
	if len(many) != 2 || !reflect.DeepEqual(map[int64]string{many[0].ID: many[0].Name, many[1].ID: many[1].Name},
		map[int64]string{j.ID: "invoice", second.ID: "second"}) {
		t.Fatalf("JobsGet = %+v, want invoice and second (a missing id is left out)", many)
	}
	equal(t, "JobsGet of none", len(get(s.JobsGet(ctx, nil)).ok(t)), 0)

	err := s.JobInsert(ctx, &store.Job{Group: "billing", Name: "invoice", TargetKind: store.TargetLocal})
	wantErr(t, err, store.ErrAlreadyExists)

	j.Description, j.Data, j.Enabled, j.AlarmTargets, j.ParamsSecret, j.DispatchTimeoutMs = "weekly", nil, false, nil, false, 2500
	j.AlarmPolicy = store.AlarmPolicy{}
	j.Concurrency, j.MaxConcurrent = store.ConcurrencyCancel, 0
	noErr(t, s.JobUpdate(ctx, j))
	got = get(s.JobGet(ctx, j.ID)).ok(t)
	if got.Description != "weekly" || got.Data != nil || got.Enabled || got.AlarmTargets != nil || got.ParamsSecret || got.DispatchTimeoutMs != 2500 ||
		got.Concurrency != store.ConcurrencyCancel || got.MaxConcurrent != 0 {
		t.Fatalf("after JobUpdate: %+v", got)
	}
	for i, failed := range []bool{true, true, false, true} {
		n := get(s.JobCountResult(ctx, j.ID, failed)).ok(t)
		equal(t, "failures in a row", n, []int{1, 2, 0, 1}[i])
	}
	equal(t, "failures in a row read back", get(s.JobGet(ctx, j.ID)).ok(t).ConsecutiveFailures, 1)
	_, err = s.JobCountResult(ctx, j.ID+1000, true)
	wantErr(t, err, store.ErrNotFound)
	noErr(t, s.JobSetPause(ctx, j.ID, "alice", "vendor down", 1234))
	got = get(s.JobGet(ctx, j.ID)).ok(t)
	if got.PausedBy != "alice" || got.PauseNote != "vendor down" || got.PausedAt != 1234 {
		t.Fatalf("after JobSetPause: by %q note %q at %d", got.PausedBy, got.PauseNote, got.PausedAt)
	}
	noErr(t, s.JobSetPause(ctx, j.ID, "", "", 0))
	got = get(s.JobGet(ctx, j.ID)).ok(t)
	equal(t, "pause cleared", got.PausedBy+got.PauseNote, "")
	wantErr(t, s.JobSetPause(ctx, j.ID+1000, "a", "b", 1), store.ErrNotFound)
	noErr(t, s.JobSetData(ctx, j.ID, map[string]any{"count": 2.0}))
	got = get(s.JobGet(ctx, j.ID)).ok(t)
	equal(t, "data count", got.Data["count"], any(2.0))

	other := newJob(t, s, "billing", "other")
	other.Name = "invoice"
	wantErr(t, s.JobUpdate(ctx, other), store.ErrAlreadyExists)

	tr := newTrigger(t, s, j.ID, "billing", "t1", 1000)
	noErr(t, s.JobDelete(ctx, j.ID))
	_, err = s.JobGet(ctx, j.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.TriggerGet(ctx, tr.ID)
	wantErr(t, err, store.ErrNotFound) // the job's triggers go with it

	wantErr(t, s.JobDelete(ctx, j.ID), store.ErrNotFound)
	wantErr(t, s.JobUpdate(ctx, j), store.ErrNotFound)
	wantErr(t, s.JobSetData(ctx, j.ID, nil), store.ErrNotFound)
	_, err = s.JobGetByKey(ctx, "billing", "invoice")
	wantErr(t, err, store.ErrNotFound)
}

func testJobsPagination(t *testing.T, s store.Store) {
	ctx := context.Background()
	var want, wantA []int64
	for i := range 23 {
		group := "a"
		if i%3 == 0 {
			group = "b"
		}
		j := newJob(t, s, group, fmt.Sprintf("job%02d", i))
		want = append(want, j.ID)
		if group == "a" {
			wantA = append(wantA, j.ID)
		}
	}
	for _, tc := range []struct {
		group string
		want  []int64
	}{{"", want}, {"a", wantA}} {
		var got []int64
		after := int64(0)
		for page := 0; ; page++ {
			js := get(s.JobList(ctx, store.JobFilter{Group: tc.group, AfterID: after, Limit: 5})).ok(t)
			if len(js) > 5 {
				t.Fatalf("page of %d jobs with limit 5", len(js))
			}
			if len(js) == 0 {
				break
			}
			for _, j := range js {
				if tc.group != "" && j.Group != tc.group {
					t.Fatalf("group filter %q returned %q", tc.group, j.Group)
				}
			}
			got = append(got, ids(js, jobID)...)
			after = js[len(js)-1].ID
		}
		// Every row once, in order.
		equal(t, fmt.Sprintf("pages of group %q", tc.group), fmt.Sprint(got), fmt.Sprint(tc.want))
	}
	// The app filter (per-app job quotas count with it).
	remote := &store.Job{Group: "c", Name: "remote", TargetKind: store.TargetRemote, App: "billing", Handler: "h", Enabled: true}
	noErr(t, s.JobInsert(ctx, remote))
	js := get(s.JobList(ctx, store.JobFilter{App: "billing"})).ok(t)
	equal(t, "jobs of app billing", fmt.Sprint(ids(js, jobID)), fmt.Sprint([]int64{remote.ID}))
}
