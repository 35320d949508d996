package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// newClient runs a server over SQLite behind a real socket and returns a client holding an
// admin token made through the API.
func newClient(t *testing.T) *api.Client {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "sundial.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler),
		Scheduler: sundial.Config{Engine: engine.Config{PollInterval: 50 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	pw, _, err := server.EnsureAdmin(ctx, st, "admin")
	if err != nil {
		t.Fatal(err)
	}
	login, err := api.NewClient(hs.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := login.Login(ctx, "admin", pw); err != nil {
		t.Fatal(err)
	}
	tok, err := login.CreateToken(ctx, api.TokenRequest{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := api.NewClient(hs.URL, tok.Token, api.WithRequestTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The client's typed calls round-trip a job and its trigger's schedule, and a refused
// request comes back as an *api.Error naming the status, code and field.
func TestClientJobRoundTrip(t *testing.T) {
	c := newClient(t)
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
	if err := c.DeleteJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if l, err := c.ListJobs(ctx, "", api.ListOptions{}); err != nil || len(l.Items) != 0 || l.Next != nil {
		t.Fatalf("list after delete: %+v, %v", l, err)
	}
}
