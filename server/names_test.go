package server

import (
	"context"
	"net/url"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestNamesRefused: blank names and names with invisible format characters (bidi controls,
// zero-width spaces) are refused for jobs, triggers, groups, apps, calendars and users alike,
// 400 naming the field, on every database; a name stored before the rule is still found by it.
func TestNamesRefused(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnvWith(t, dialect, func(c *Config) { c.SecretKey = xxlSecretKey })
		c, ctx := e.client(), context.Background()
		wantField := func(what string, err error, field string) {
			t.Helper()
			if ae := wantStatus(t, what, err, 400); ae.Field != field {
				t.Fatalf("%s: field %q (%s), want %s", what, ae.Field, ae.Message, field)
			}
		}
		expr := "0 0 * * * ?"
		cron := api.Schedule{Cron: &expr}
		for _, name := range []string{"   ", "\u00a0\u3000", "gnp\u202eexe", "zero\u200bwidth", "\ufeffbom"} {
			_, err := c.CreateJob(ctx, api.JobRequest{Name: name, Handler: "noop"})
			wantField("job "+url.QueryEscape(name), err, "name")
			_, err = c.CreateJob(ctx, api.JobRequest{Name: "j", Group: name, Handler: "noop"})
			wantField("group "+url.QueryEscape(name), err, "group")
			_, err = c.CreateJob(ctx, api.JobRequest{Name: "j", Handler: "noop", Triggers: []api.TriggerRequest{{Name: name, Schedule: cron}}})
			wantField("trigger "+url.QueryEscape(name), err, "triggers[0].name")
			_, err = c.PutApp(ctx, name, api.AppRequest{})
			wantField("app "+url.QueryEscape(name), err, "name")
			_, err = c.PutCalendar(ctx, name, api.CalendarRequest{Spec: "weekly:1,7"})
			wantField("calendar "+url.QueryEscape(name), err, "name")
			_, err = c.CreateUser(ctx, api.UserRequest{Name: name, Password: strongPassword("u"), Role: api.RoleViewer})
			wantField("user "+url.QueryEscape(name), err, "name")
		}
		_, err := c.CreateJob(ctx, api.JobRequest{Name: "h", Handler: "no\u202eop"})
		wantField("a handler with a bidi control", err, "handler")
		if js := must(c.ListJobs(ctx, api.JobFilter{}, api.ListOptions{}))(t).Items; len(js) != 0 {
			t.Fatalf("refused jobs were stored: %+v", js)
		}

		// A name stored before the rule stays reachable by its name.
		legacy := &store.Job{Group: "default", Name: "old\u202ename", TargetKind: store.TargetLocal, Handler: "noop", Enabled: true}
		if err := e.st.JobInsert(ctx, legacy); err != nil {
			t.Fatal(err)
		}
		if j, err := c.FindJob(ctx, "default", legacy.Name); err != nil || j.ID != legacy.ID {
			t.Fatalf("the legacy name looked up: %+v, %v", j, err)
		}
	})
}
