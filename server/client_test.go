package server

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// The client's typed calls round-trip a job and its trigger's schedule, and a refused
// request comes back as an *api.Error naming the status, code and field.
func TestClientJobRoundTrip(t *testing.T) {
	c := newEnv(t, "sqlite").client()
	ctx := context.Background()
	cron, repeat := "0 0 9 ? * MON-FRI", 2
	j, err := c.CreateJob(ctx, api.JobRequest{Name: "report", Handler: "noop", MaxRetries: 3, Triggers: []api.TriggerRequest{
		{Schedule: api.Schedule{Cron: &cron, TimeZone: "Europe/Berlin"}},
		{Schedule: api.Schedule{DailyInterval: &api.DailyInterval{From: "09:00", To: "17:00", Interval: 2, Unit: "HOUR", Days: "MON-FRI", Repeat: &repeat}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Triggers) != 2 || j.Triggers[0].Summary() != "cron 0 0 9 ? * MON-FRI (Europe/Berlin)" ||
		j.Triggers[1].Summary() != "09:00:00-17:00:00 every 2 HOUR MON,TUE,WED,THU,FRI" || j.MaxRetries != 3 {
		t.Fatalf("created %+v", j)
	}
	got, err := c.GetJob(ctx, j.ID)
	if err != nil || got.Name != "report" || got.CreatedAt.IsZero() {
		t.Fatalf("get: %+v, %v", got, err)
	}
	req := got.Request()
	req.MaxRetries = 5
	if upd, err := c.UpdateJob(ctx, j.ID, req); err != nil || upd.MaxRetries != 5 || len(upd.Triggers) != 2 {
		t.Fatalf("update: %+v, %v", upd, err)
	}

	bad := "0 0 25 * * ?"
	_, err = c.AddTrigger(ctx, j.ID, api.TriggerRequest{Schedule: api.Schedule{Cron: &bad}})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code != api.CodeInvalidArgument || ae.Field != "cron" || ae.Message == "" {
		t.Fatalf("bad cron: %#v, want a 400 naming cron", err)
	}
	if _, err := c.GetJob(ctx, 99999); !api.IsNotFound(err) {
		t.Fatalf("missing job: %v, want not found", err)
	}
	if err := c.DeleteJob(ctx, j.ID, false); err != nil {
		t.Fatal(err)
	}
	if l, err := c.ListJobs(ctx, api.JobFilter{}, api.ListOptions{}); err != nil || len(l.Items) != 0 || l.Next != nil {
		t.Fatalf("list after delete: %+v, %v", l, err)
	}
}
