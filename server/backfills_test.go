package server

import (
	"context"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestBackfillScope: an operator of one app can backfill its own jobs and follow and cancel
// those backfills, but cannot backfill, see or cancel another app's; a viewer can list but
// not start one; bad requests name their field. On every database.
func TestBackfillScope(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		admin := e.client()
		cron := "0 0 2 * * ?"
		mk := func(name, app string) *api.Job {
			req := jobReq(name, app, "report")
			req.Triggers = []api.TriggerRequest{{Schedule: api.Schedule{Cron: &cron}}}
			return must(admin.CreateJob(ctx, req))(t)
		}
		mine, theirs := mk("mine", "billing"), mk("theirs", "mail")
		op, _ := e.userClient(api.UserRequest{Name: "olga", Role: api.RoleOperator, Scope: []string{"billing"}})
		viewer, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer})
		rng := api.BackfillRequest{From: "2026-03-01T00:00:00Z", To: "2026-03-02T00:00:00Z"}

		ours := must(op.Backfill(ctx, mine.ID, rng))(t)
		if ours.ID == 0 || ours.Total != 1 || ours.CreatedBy == "" {
			t.Fatalf("the operator's backfill: %+v", ours)
		}
		other := must(admin.Backfill(ctx, theirs.ID, rng))(t)
		_, err := op.Backfill(ctx, theirs.ID, rng)
		wantStatus(t, "backfilling another app's job", err, 403)
		_, err = op.GetBackfill(ctx, other.ID)
		wantStatus(t, "reading another app's backfill", err, 403)
		_, err = op.CancelBackfill(ctx, other.ID)
		wantStatus(t, "canceling another app's backfill", err, 403)
		_, err = op.ListBackfills(ctx, theirs.ID)
		wantStatus(t, "listing another app's backfills", err, 403)
		_, err = viewer.Backfill(ctx, mine.ID, rng)
		wantStatus(t, "a viewer starting a backfill", err, 403)
		if bs := must(viewer.ListBackfills(ctx, mine.ID))(t); len(bs) != 1 || bs[0].ID != ours.ID {
			t.Fatalf("a viewer's list: %+v", bs)
		}
		if c := must(op.CancelBackfill(ctx, ours.ID))(t); c.State != "canceled" && c.State != "done" {
			t.Fatalf("canceled: state %s", c.State)
		}
		for field, req := range map[string]api.BackfillRequest{
			"from":           {To: rng.To},
			"to":             {From: rng.To, To: rng.From},
			"max_concurrent": {From: rng.From, To: rng.To, MaxConcurrent: 101},
			"chunk":          {From: rng.From, To: rng.To, Chunk: -1},
			"trigger":        {From: rng.From, To: rng.To, Trigger: theirs.Triggers[0].ID},
		} {
			_, err := admin.Backfill(ctx, mine.ID, req)
			if ae := wantStatus(t, "a bad "+field, err, 400); ae.Field != field {
				t.Errorf("a bad %s: field %q", field, ae.Field)
			}
		}
	})
}
