package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
)

// TestWorkflowBackfillAPI backfills a workflow over the API: a dry run plans one run per
// scheduled time of its trigger job's trigger and stores nothing; the backfill makes workflow
// runs marked backfill with their data intervals, whose nodes ran for those intervals. A
// workflow without a trigger, or with a trigger not its own, is refused at the trigger field;
// a viewer and an operator of another app get 403. On every database.
func TestWorkflowBackfillAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		var mu sync.Mutex
		var ran []string // the node runs' data intervals, outside the database
		e := newEnvOn(t, openStore(t, dialect), nil, func(s *Server) {
			s.Register("wload", func(ctx context.Context) error {
				x := sundial.ExecutionFrom(ctx)
				mu.Lock()
				ran = append(ran, fmt.Sprintf("%d-%d", x.IntervalStart.UnixMilli(), x.IntervalEnd.UnixMilli()))
				mu.Unlock()
				return nil
			})
		})
		ctx := context.Background()
		admin := e.client()
		load := must(admin.CreateJob(ctx, jobReq("wload", "", "wload")))(t)
		must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "nightly",
			Graph: json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"load","job_id":%d}]}`, load.ID))}))(t)
		rng := api.BackfillRequest{From: "2026-03-01T00:00:00Z", To: "2026-03-03T23:00:00Z", MaxConcurrent: 2}
		_, err := admin.BackfillWorkflow(ctx, "nightly", rng)
		if ae := wantStatus(t, "a workflow without a trigger", err, 400); ae.Field != "trigger" {
			t.Errorf("field %q", ae.Field)
		}
		cron := "0 0 2 * * ?"
		starter := jobReq("nightly-trigger", "", engine.WorkflowHandler)
		starter.Params = "nightly"
		starter.Triggers = []api.TriggerRequest{{Schedule: api.Schedule{Cron: &cron}}}
		must(admin.CreateJob(ctx, starter))(t)
		other := jobReq("other", "", "wload")
		other.Triggers = []api.TriggerRequest{{Schedule: api.Schedule{Cron: &cron}}}
		otherJob := must(admin.CreateJob(ctx, other))(t)
		_, err = admin.BackfillWorkflow(ctx, "nightly", api.BackfillRequest{From: rng.From, To: rng.To, Trigger: otherJob.Triggers[0].ID})
		if ae := wantStatus(t, "another job's trigger", err, 400); ae.Field != "trigger" {
			t.Errorf("field %q", ae.Field)
		}
		viewer, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer})
		_, err = viewer.BackfillWorkflow(ctx, "nightly", rng)
		wantStatus(t, "a viewer backfilling a workflow", err, 403)
		alphaJob := must(admin.CreateJob(ctx, jobReq("remote", "alpha", "h")))(t)
		must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "alpha-flow",
			Graph: json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"r","job_id":%d}]}`, alphaJob.ID))}))(t)
		op, _ := e.userClient(api.UserRequest{Name: "otto", Role: api.RoleOperator, Scope: []string{"beta"}})
		_, err = op.BackfillWorkflow(ctx, "alpha-flow", rng)
		wantStatus(t, "an operator backfilling another app's workflow", err, 403)
		_, err = admin.BackfillWorkflow(ctx, "nope", rng)
		wantStatus(t, "no such workflow", err, 404)

		dry := rng
		dry.DryRun = true
		plan := must(admin.BackfillWorkflow(ctx, "nightly", dry))(t)
		if plan.ID != 0 || plan.Total != 3 || plan.Workflow != "nightly" {
			t.Fatalf("the dry run: %+v", plan)
		}
		if runs := must(admin.ListWorkflowRuns(ctx, "nightly", api.ListOptions{}))(t); len(runs.Items) != 0 {
			t.Fatalf("the dry run started %d runs", len(runs.Items))
		}
		b := must(admin.BackfillWorkflow(ctx, "nightly", rng))(t)
		if b.ID == 0 || b.Total != 3 || b.Workflow != "nightly" {
			t.Fatalf("the backfill: %+v", b)
		}
		var runs *api.Page[api.WorkflowRun]
		// A backfill is done once each of its fires has started its run; the runs end after.
		eventually(t, "the backfill to be done and its runs to end", func() bool {
			if must(admin.GetBackfill(ctx, b.ID))(t).State != "done" {
				return false
			}
			runs = must(admin.ListWorkflowRuns(ctx, "nightly", api.ListOptions{}))(t)
			return !slices.ContainsFunc(runs.Items, func(r api.WorkflowRun) bool { return r.State == "running" || r.State == "queued" })
		})
		var got []string
		for _, r := range runs.Items {
			if r.Cause != "backfill" || r.BackfillID != b.ID || r.State != "succeeded" {
				t.Errorf("run %+v: want a succeeded run of backfill %d", r, b.ID)
			}
			got = append(got, fmt.Sprintf("%d-%d", r.IntervalStart, r.IntervalEnd))
		}
		want := []string{"1772244000000-1772330400000", "1772330400000-1772416800000", "1772416800000-1772503200000"} // 02:00 to 02:00, 28 Feb to 3 Mar
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("the runs' intervals %v, want %v", got, want)
		}
		mu.Lock()
		defer mu.Unlock()
		slices.Sort(ran)
		if !slices.Equal(ran, want) {
			t.Errorf("the load node ran for %v, want %v", ran, want)
		}
	})
}
