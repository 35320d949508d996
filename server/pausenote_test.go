package server

import (
	"context"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestPauseNoteAPI: pausing a job through the REST route records who (the caller), why (the
// note) and when, on the job and in the job's answer, pauses its triggers, and resuming clears
// all three. A note over 500 characters is a 400 naming `note` that pauses nothing; a viewer,
// and an operator of another app, get 403.
func TestPauseNoteAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		admin := e.client()
		cron := "0 0 2 * * ?"
		mk := func(name, app string) *api.Job {
			req := jobReq(name, app, "report")
			req.Triggers = []api.TriggerRequest{{Schedule: api.Schedule{Cron: &cron, TimeZone: "UTC"}}}
			return must(admin.CreateJob(ctx, req))(t)
		}
		mine, theirs := mk("mine", "billing"), mk("theirs", "mail")
		op, _ := e.userClient(api.UserRequest{Name: "olga", Role: api.RoleOperator, Scope: []string{"billing"}})
		viewer, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer})

		_, err := op.PauseJobNoted(ctx, mine.ID, strings.Repeat("n", 501))
		if ae := wantStatus(t, "a 501-character note", err, 400); ae != nil && ae.Field != "note" {
			t.Errorf("400 names %q, want note", ae.Field)
		}
		if j := must(admin.GetJob(ctx, mine.ID))(t); j.PausedBy != "" || j.Triggers[0].State == "paused" {
			t.Fatalf("a refused pause paused the job: by %q, trigger %s", j.PausedBy, j.Triggers[0].State)
		}
		_, err = viewer.PauseJobNoted(ctx, mine.ID, "a viewer")
		wantStatus(t, "a viewer pausing", err, 403)
		_, err = op.PauseJobNoted(ctx, theirs.ID, "not my app")
		wantStatus(t, "pausing another app's job", err, 403)

		got := must(op.PauseJobNoted(ctx, mine.ID, "vendor API down until 14:00"))(t)
		shown := must(admin.GetJob(ctx, mine.ID))(t)
		for _, j := range []*api.Job{got, shown} {
			if j.PausedBy != "olga" || j.PauseNote != "vendor API down until 14:00" || j.PausedAt == nil || j.Triggers[0].State != "paused" {
				t.Errorf("paused job: by %q note %q at %v, trigger %s; want olga's note, a time, the trigger paused",
					j.PausedBy, j.PauseNote, j.PausedAt, j.Triggers[0].State)
			}
		}
		resumed := must(op.ResumeJob(ctx, mine.ID))(t)
		if resumed.PausedBy != "" || resumed.PauseNote != "" || resumed.PausedAt != nil || resumed.Triggers[0].State != "waiting" {
			t.Errorf("resumed job: by %q note %q at %v, trigger %s; want all cleared and waiting",
				resumed.PausedBy, resumed.PauseNote, resumed.PausedAt, resumed.Triggers[0].State)
		}
	})
}
