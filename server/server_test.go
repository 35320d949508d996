package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
)

func TestUnauthenticated(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		for _, rt := range e.srv.routeTable() {
			if rt.pol.act == ActPublic {
				continue
			}
			path := strings.NewReplacer("{id}", "1", "{name}", "x").Replace(rt.path)
			for _, token := range []string{"", "sdl_not-a-real-token", "not-even-the-prefix"} {
				resp := e.raw(rt.method, path, token, nil, map[string]string{})
				var eb api.ErrorBody
				mustDecode(t, resp, &eb)
				if resp.StatusCode != http.StatusUnauthorized || eb.Error.Code != "unauthenticated" {
					t.Errorf("%s %s with token %q: %d %+v, want 401 unauthenticated", rt.method, path, token, resp.StatusCode, eb.Error)
				}
			}
		}
		// Unknown routes do not tell an anonymous caller what exists.
		if resp := e.raw("GET", "/api/v1/nothing-here", "", nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("unknown route without credentials: %d, want 401", resp.StatusCode)
		}
		for _, p := range []string{"/healthz", "/readyz"} {
			if resp := e.raw("GET", p, "", nil, nil); resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %d, want 200 without credentials", p, resp.StatusCode)
			}
		}
		// The token works until it is deleted.
		var toks api.Page[api.Token]
		e.call("GET", "/api/v1/tokens", nil, 200, &toks)
		if len(toks.Items) != 1 || toks.Items[0].Token != "" {
			t.Fatalf("token list %+v: want one token without its secret", toks.Items)
		}
		e.call("DELETE", fmt.Sprintf("/api/v1/tokens/%d", toks.Items[0].ID), nil, 204, nil)
		if resp := e.raw("GET", "/api/v1/jobs", e.token, nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("deleted token: %d, want 401", resp.StatusCode)
		}
	})
}

func TestSession(t *testing.T) {
	e := newEnv(t, "sqlite")
	if resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": "admin", "password": "wrong"}); resp.StatusCode != 401 {
		t.Fatalf("wrong password: %d, want 401", resp.StatusCode)
	}
	if resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": "nobody", "password": e.pw}); resp.StatusCode != 401 {
		t.Fatalf("unknown user: %d, want 401", resp.StatusCode)
	}
	resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": "admin", "password": e.pw})
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Lax", cookie)
	}
	var me api.User
	mustDecode(t, e.raw("GET", "/api/v1/auth/me", "", cookie, nil), &me)
	if me.Name != "admin" || me.Via != "session" {
		t.Fatalf("me = %+v", me)
	}

	// A cookie-carried write from another origin is refused.
	req, _ := http.NewRequest("POST", e.url+"/api/v1/jobs", strings.NewReader(`{"name":"x","handler":"noop"}`))
	req.AddCookie(cookie)
	req.Header.Set("Origin", "https://evil.example")
	cross, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cross.Body.Close()
	if cross.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin write with a cookie: %d, want 403", cross.StatusCode)
	}
	if _, err := e.st.JobGetByKey(context.Background(), "default", "x"); err == nil {
		t.Fatal("the refused cross-origin write stored a job")
	}

	if resp := e.raw("POST", "/api/v1/auth/logout", "", cookie, nil); resp.StatusCode != 204 {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if resp := e.raw("GET", "/api/v1/auth/me", "", cookie, nil); resp.StatusCode != 401 {
		t.Fatalf("session after logout: %d, want 401", resp.StatusCode)
	}

	// Password change: the old password stops working, the new one logs in.
	e.call("POST", "/api/v1/auth/password", map[string]string{"current_password": e.pw, "new_password": "short"}, 400, nil)
	e.call("POST", "/api/v1/auth/password", map[string]string{"current_password": e.pw, "new_password": "a much longer secret"}, 204, nil)
	if resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": "admin", "password": e.pw}); resp.StatusCode != 401 {
		t.Fatalf("old password after change: %d, want 401", resp.StatusCode)
	}
	if resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": "admin", "password": "a much longer secret"}); resp.StatusCode != 200 {
		t.Fatalf("new password: %d, want 200", resp.StatusCode)
	}
}

func TestAdminCreatedOnce(t *testing.T) {
	e := newEnv(t, "sqlite") // its start created the admin
	pw, created, err := EnsureAdmin(context.Background(), e.st, "admin")
	if err != nil || created || pw != "" {
		t.Fatalf("second EnsureAdmin: password %q created %v err %v; want nothing new", pw, created, err)
	}
	// The first password still logs in: the second start changed nothing.
	if resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": "admin", "password": e.pw}); resp.StatusCode != 200 {
		t.Fatalf("first password after a second start: %d", resp.StatusCode)
	}
}

func TestBadInputStoresNothing(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		good := map[string]any{"cron": "0 0 * * * ?"}
		job := func(trigs ...map[string]any) map[string]any {
			return map[string]any{"name": "j", "handler": "noop", "triggers": trigs}
		}
		for _, tc := range []struct {
			body  any
			field string
			has   string
		}{
			{job(map[string]any{"cron": "0 0 25 * * ?"}), "triggers[0].cron", "hours"},
			{job(good, map[string]any{"cron": "0 0 * * *"}), "triggers[1].cron", "6 or 7 fields"},
			{job(map[string]any{"cron": "0 0 * * * ?", "time_zone": "Mars/Olympus"}), "triggers[0].time_zone", "Mars/Olympus"},
			{job(map[string]any{"cron": "0 0 * * * ?", "every_ms": 1000}), "triggers[0].every_ms", "exactly one"},
			{job(map[string]any{}), "triggers[0].cron", "exactly one"},
			{job(map[string]any{"every_ms": 0, "repeat": 3}), "triggers[0].every_ms", "at least 1 ms"},
			{job(map[string]any{"cron": "0 0 * * * ?", "misfire": "sometimes"}), "triggers[0].misfire", "sometimes"},
			{job(map[string]any{"every_ms": 1000, "misfire": "do_nothing"}), "triggers[0].misfire", "invalid"},
			{job(map[string]any{"cron": "0 0 0 1 1 ? 2001"}), "triggers[0].cron", "never fire"},
			{job(map[string]any{"cron": "0 0 * * * ?", "calendar": "nope"}), "triggers[0].calendar", "nope"},
			{job(map[string]any{"cron": "0 0 * * * ?", "start": "tomorrow"}), "triggers[0].start", "RFC 3339"},
			{job(good, map[string]any{"cron": "0 0 * * * ?", "start": "2030-01-02T00:00:00Z", "end": "2030-01-01T00:00:00Z"}), "triggers[1].end", "before start"},
			{job(map[string]any{"every_ms": 1000, "repeat": -2}), "triggers[0].repeat", "forever"},
			{job(map[string]any{"daily_interval": map[string]any{"from": "09:00", "to": "17:00", "interval": 1, "unit": "DAY"}}), "triggers[0].daily_interval", "Unit"},
			{job(map[string]any{"calendar_interval": map[string]any{"interval": 1, "unit": "FORTNIGHT"}}), "triggers[0].calendar_interval.unit", "FORTNIGHT"},
			{job(good, map[string]any{"name": "j#1", "cron": "0 0 * * * ?"}), "triggers[1].name", "triggers[0]"},
			{map[string]any{"name": "", "handler": "noop"}, "name", "empty"},
			{map[string]any{"name": "j", "handler": ""}, "handler", "empty"},
			{map[string]any{"name": "j", "handler": "noop", "concurrency": "sometimes"}, "concurrency", "serial"},
			{map[string]any{"name": "j", "handler": "noop", "concurrency": "at_most", "max_concurrent": 1001}, "max_concurrent", "1 to 1000"},
			{map[string]any{"name": "j", "handler": "noop", "concurrency": "at_most"}, "max_concurrent", "got 0"},
			{map[string]any{"name": "j", "handler": "noop", "concurrency": "buffer_one", "max_concurrent": 2}, "max_concurrent", "only concurrency at_most"},
			{map[string]any{"name": "j", "handler": "noop", "timeout_ms": -1}, "timeout_ms", "negative"},
			{map[string]any{"name": "j", "handler": "noop", "retry_backoff_ms": -5}, "retry_backoff_ms", "negative"},
			{map[string]any{"name": "j", "handler": "noop", "max_retries": "three"}, "max_retries", "int"},
			{map[string]any{"name": "j", "handler": "noop", "triggers": []any{map[string]any{"crom": "0 0 * * * ?"}}}, "crom", "unknown field"},
			{map[string]any{"name": "j", "handler": "report", "app": "billing", "routing": "loudest"}, "routing", "loudest"},
			{map[string]any{"name": "j", "handler": "report", "routing": "round_robin"}, "routing", "needs an app"},
			{map[string]any{"name": "j", "handler": "report", "app": "billing", "dispatch_timeout_ms": -1}, "dispatch_timeout_ms", "3600000"},
			{map[string]any{"name": "j", "handler": "report", "app": "billing", "dispatch_timeout_ms": 3600001}, "dispatch_timeout_ms", "3600000"},
			{map[string]any{"name": "j", "handler": "noop", "dispatch_timeout_ms": 5000}, "dispatch_timeout_ms", "needs an app"},
		} {
			got := e.callErr("POST", "/api/v1/jobs", tc.body, http.StatusBadRequest)
			if got.Code != "invalid_argument" || got.Field != tc.field || !strings.Contains(got.Message, tc.has) {
				t.Errorf("%v:\n got %+v\nwant field %s, message containing %q", tc.body, got, tc.field, tc.has)
			}
		}
		e.callErr("POST", "/api/v1/jobs", "not an object", http.StatusBadRequest)

		var jobs api.Page[api.Job]
		e.call("GET", "/api/v1/jobs", nil, 200, &jobs)
		if len(jobs.Items) != 0 {
			t.Fatalf("bad requests stored jobs: %+v", jobs.Items)
		}
		trigs, err := e.st.TriggerList(context.Background(), store.TriggerFilter{})
		if err != nil || len(trigs) != 0 {
			t.Fatalf("bad requests stored triggers: %d, %v", len(trigs), err)
		}

		// Bad query parameters name the parameter.
		for _, tc := range []struct{ path, field string }{
			{"/api/v1/jobs?limit=0", "limit"}, {"/api/v1/executions?state=done", "state"},
			{"/api/v1/executions?from=yesterday", "from"}, {"/api/v1/jobs/abc", "id"},
		} {
			if got := e.callErr("GET", tc.path, nil, 400); got.Field != tc.field {
				t.Errorf("%s: field %q, want %q", tc.path, got.Field, tc.field)
			}
		}
		e.callErr("GET", "/api/v1/jobs/12345", nil, 404)
		if got := e.callErr("PATCH", "/api/v1/jobs", nil, 405); got.Code != "method_not_allowed" {
			t.Errorf("PATCH /jobs: %+v", got)
		}
	})
}

func TestJobFiresEndToEnd(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		c, ctx := e.client(), context.Background()
		cron := "0 0 * * * ?"
		job := must(c.CreateJob(ctx, api.JobRequest{Name: "hello", Handler: "noop", Triggers: []api.TriggerRequest{
			{Schedule: api.Schedule{Cron: &cron, TimeZone: "Europe/Berlin"}},
			{Schedule: api.Schedule{Once: true}},
		}}))(t)
		if len(job.Triggers) != 2 || job.Triggers[0].Kind != "cron" || *job.Triggers[0].Cron != "0 0 * * * ?" ||
			!job.Triggers[1].Once || len(job.Warnings) != 0 {
			t.Fatalf("created job %+v", job)
		}
		once := job.Triggers[1].ID

		var ex api.Execution
		eventually(t, "the one-shot trigger's execution to succeed", func() bool {
			p := must(c.ListExecutions(ctx, api.ExecutionFilter{JobID: job.ID, State: "succeeded"}, api.ListOptions{}))(t)
			for _, x := range p.Items {
				if x.TriggerID == once {
					ex = x
					return true
				}
			}
			return false
		})
		if detail := must(c.GetExecution(ctx, ex.ID))(t); detail.State != "succeeded" || detail.JobID != job.ID {
			t.Fatalf("execution detail %+v", detail)
		}
		out := must(c.ExecutionOutput(ctx, ex.ID, api.ListOptions{}))(t)
		if len(out.Items) != 1 || !strings.Contains(out.Items[0].Message, "noop ran") {
			t.Fatalf("output %+v: want the noop line", out.Items)
		}

		// follow streams the same line and then the end of the execution.
		resp := e.raw("GET", fmt.Sprintf("/api/v1/executions/%d/output?follow=true", ex.ID), e.token, nil, nil)
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("follow content type %q", ct)
		}
		stream, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(stream), "event: line\ndata: {\"line\":1") || !strings.Contains(string(stream), "event: end") {
			t.Fatalf("follow stream:\n%s", stream)
		}
		// The client reads the same stream into typed events.
		var events []string
		ended, err := c.FollowOutput(ctx, ex.ID, 0, func(ev api.OutputEvent) error {
			switch {
			case ev.Line != nil:
				events = append(events, "line "+ev.Line.Message)
			case ev.End != nil:
				events = append(events, "end "+ev.End.State)
			}
			return nil
		})
		if err != nil || !ended || len(events) != 2 || !strings.Contains(events[0], "noop ran") || events[1] != "end succeeded" {
			t.Fatalf("follow: ended %v, err %v, events %q", ended, err, events)
		}

		// The cron trigger waits; the one-shot is complete.
		if trig := must(c.GetTrigger(ctx, once))(t); trig.State != "complete" {
			t.Fatalf("one-shot trigger state %q, want complete", trig.State)
		}
		if job = must(c.PauseJob(ctx, job.ID))(t); job.Triggers[0].State != "paused" {
			t.Fatalf("after pause: %+v", job.Triggers[0])
		}
		if job = must(c.ResumeJob(ctx, job.ID))(t); job.Triggers[0].State != "waiting" {
			t.Fatalf("after resume: %+v", job.Triggers[0])
		}

		// A job whose handler this node lacks fails at fire time, saying so.
		orphan := must(c.CreateJob(ctx, api.JobRequest{Name: "orphan", Handler: "report"}))(t)
		if len(orphan.Warnings) != 1 || !strings.Contains(orphan.Warnings[0], `"report"`) {
			t.Fatalf("warnings %v: want one about the unregistered handler", orphan.Warnings)
		}
		run := must(c.RunJob(ctx, orphan.ID))(t)
		eventually(t, "the orphan's run to fail", func() bool {
			run = must(c.GetExecution(ctx, run.ID))(t)
			return run.State == "failed"
		})
		if !strings.Contains(run.HandleMsg, `no handler "report"`) {
			t.Fatalf("handle message %q: want it to name the missing handler", run.HandleMsg)
		}

		// The metrics saw the noop run.
		resp = e.raw("GET", "/metrics", e.token, nil, nil)
		body, _ := io.ReadAll(resp.Body)
		for _, want := range []string{`sundial_executions_total{state="succeeded"}`, "sundial_fires_total", "sundial_fire_lateness_seconds_count",
			"sundial_fire_late_seconds", "sundial_fires_backlog 0", "sundial_heartbeat_age_seconds"} {
			if !strings.Contains(string(body), want) {
				t.Errorf("metrics lack %s", want)
			}
		}

		if err := c.DeleteJob(ctx, job.ID, false); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetJob(ctx, job.ID); !api.IsNotFound(err) {
			t.Fatalf("deleted job: %v, want not found", err)
		}
		if _, err := c.GetTrigger(ctx, once); !api.IsNotFound(err) {
			t.Fatalf("deleted job's trigger: %v, want not found", err)
		}
	})
}

func TestPagination(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		var want []int64
		for i := range 13 {
			var j api.Job
			e.call("POST", "/api/v1/jobs", map[string]any{"name": fmt.Sprintf("job%02d", i), "handler": "noop"}, 201, &j)
			want = append(want, j.ID)
		}
		got := collect[api.Job](t, e, "/api/v1/jobs?limit=5", func(j api.Job) int64 { return j.ID })
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("job pages %v, want %v (every row once, in order)", got, want)
		}

		// Recent times: the leader's retention sweep, which starts with the node, deletes
		// executions fired long ago.
		base := time.Now().Add(-time.Hour).Truncate(time.Second)
		var xs []*store.Execution
		for i := range 17 {
			at := base.Add(time.Duration(i) * time.Millisecond).UnixMilli()
			xs = append(xs, &store.Execution{JobID: want[i%2], ScheduledAt: at, FiredAt: at,
				Cause: store.CauseAPI, State: store.ExecSucceeded})
		}
		if _, err := e.st.ExecutionsInsert(ctx, xs); err != nil {
			t.Fatal(err)
		}
		var all, ofJob0 []int64
		for i, x := range xs {
			all = append(all, x.ID)
			if i%2 == 0 {
				ofJob0 = append(ofJob0, x.ID)
			}
		}
		id := func(x api.Execution) int64 { return x.ID }
		if got := collect[api.Execution](t, e, "/api/v1/executions?limit=4&order=asc", id); fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("executions ascending %v, want %v", got, all)
		}
		desc := collect[api.Execution](t, e, "/api/v1/executions?limit=4", id)
		if len(desc) != len(all) || desc[0] != all[len(all)-1] {
			t.Fatalf("executions newest first %v, want %d rows from %d down", desc, len(all), all[len(all)-1])
		}
		path := fmt.Sprintf("/api/v1/executions?limit=3&order=asc&state=succeeded&job_id=%d", want[0])
		if got := collect[api.Execution](t, e, path, id); fmt.Sprint(got) != fmt.Sprint(ofJob0) {
			t.Fatalf("executions of job %d: %v, want %v", want[0], got, ofJob0)
		}
		// base+5 ms <= fired_at < base+9 ms: executions 5..8.
		rfc := func(d time.Duration) string { return base.Add(d).UTC().Format("2006-01-02T15:04:05.000Z") }
		ranged := collect[api.Execution](t, e, "/api/v1/executions?order=asc&from="+rfc(5*time.Millisecond)+"&to="+rfc(9*time.Millisecond), id)
		if fmt.Sprint(ranged) != fmt.Sprint(all[5:9]) {
			t.Fatalf("time range %v, want %v", ranged, all[5:9])
		}
	})
}

// collect follows next cursors from path and returns every item's id, checking that the
// last page has no cursor.
func collect[T any](t *testing.T, e *env, path string, id func(T) int64) []int64 {
	t.Helper()
	var out []int64
	cursor := ""
	for range 100 {
		p := path
		if cursor != "" {
			p += "&after=" + cursor
		}
		var pg api.Page[T]
		e.call("GET", p, nil, 200, &pg)
		for _, it := range pg.Items {
			out = append(out, id(it))
		}
		if pg.Next == nil {
			return out
		}
		cursor = *pg.Next
	}
	t.Fatalf("%s: more than 100 pages", path)
	return nil
}

func TestCalendarsAndTriggers(t *testing.T) {
	e := newEnv(t, "sqlite")
	c, ctx := e.client(), context.Background()
	fieldOf := func(err error) string {
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != 400 {
			t.Fatalf("error %v: want a 400", err)
		}
		return ae.Field
	}
	if _, err := c.PutCalendar(ctx, "h", api.CalendarRequest{Spec: "holiday:2024-13-45"}); fieldOf(err) != "spec" {
		t.Fatalf("bad calendar spec: %v", err)
	}
	if _, err := c.PutCalendar(ctx, "h", api.CalendarRequest{Spec: "weekly:1,7", Base: "missing"}); fieldOf(err) != "base" {
		t.Fatalf("missing base: %v", err)
	}
	if _, err := c.PutCalendar(ctx, "h", api.CalendarRequest{Spec: "weekly:1,7", Base: "h"}); fieldOf(err) != "base" {
		t.Fatalf("own base: %v", err)
	}
	cal := must(c.PutCalendar(ctx, "weekend", api.CalendarRequest{Spec: "weekly:1,7", Description: "no weekends"}))(t)
	if cal.Name != "weekend" || cal.Spec != "weekly:1,7" || cal.Description != "no weekends" || cal.UpdatedAt.IsZero() {
		t.Fatalf("calendar %+v", cal)
	}
	j := must(c.CreateJob(ctx, api.JobRequest{Name: "weekday", Handler: "noop"}))(t)
	tr := must(c.AddTrigger(ctx, j.ID, api.TriggerRequest{Calendar: "weekend", Schedule: api.Schedule{TimeZone: "America/New_York",
		DailyInterval: &api.DailyInterval{From: "09:00", To: "17:00", Interval: 30, Unit: "MINUTE", Days: "MON-FRI"}}}))(t)
	if tr.Name != "weekday#1" || tr.DailyInterval == nil || tr.DailyInterval.Days != "MON,TUE,WED,THU,FRI" || tr.Calendar != "weekend" {
		t.Fatalf("added trigger %+v", tr)
	}
	bad := "bad"
	if _, err := c.AddTrigger(ctx, j.ID, api.TriggerRequest{Schedule: api.Schedule{Cron: &bad}}); fieldOf(err) != "cron" {
		t.Fatalf("bad added trigger: %v", err)
	}
	if err := c.DeleteCalendar(ctx, "weekend"); api.StatusOf(err) != 409 {
		t.Fatalf("delete a calendar in use: %v, want 409", err)
	}
	if tr = must(c.PauseTrigger(ctx, tr.ID))(t); tr.State != "paused" {
		t.Fatalf("paused trigger state %q", tr.State)
	}
	if trs := must(c.ListTriggers(ctx, j.ID, api.ListOptions{}))(t); len(trs.Items) != 1 || trs.Items[0].State != "paused" {
		t.Fatalf("job triggers %+v", trs.Items)
	}
	if err := c.DeleteTrigger(ctx, tr.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteCalendar(ctx, "weekend"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetCalendar(ctx, "weekend"); !api.IsNotFound(err) {
		t.Fatalf("deleted calendar: %v", err)
	}

	// PUT replaces the job's settings; triggers are not changed through it.
	upd := must(c.UpdateJob(ctx, j.ID, api.JobRequest{Name: "weekday", Handler: "noop", Description: "now described", MaxRetries: 2}))(t)
	if upd.Description != "now described" || upd.MaxRetries != 2 || upd.Group != "default" {
		t.Fatalf("updated job %+v", upd)
	}
	if _, err := c.UpdateJob(ctx, j.ID, api.JobRequest{Name: "weekday", Handler: "noop", MaxRetries: -1}); fieldOf(err) != "max_retries" {
		t.Fatalf("update with negative retries: %v", err)
	}
	// An empty triggers list is still a list: the typed client never sends one, so raw JSON.
	if got := e.callErr("PUT", fmt.Sprintf("/api/v1/jobs/%d", j.ID), map[string]any{"name": "weekday", "handler": "noop",
		"triggers": []any{}}, 400); got.Field != "triggers" {
		t.Fatalf("PUT with triggers: %+v", got)
	}

	if nodes := must(c.ListNodes(ctx, api.ListOptions{}))(t); len(nodes.Items) != 1 || !nodes.Items[0].Self {
		t.Fatalf("nodes %+v: want this node", nodes.Items)
	}
}

func TestReadyz(t *testing.T) {
	e := newEnv(t, "sqlite")
	if resp := e.raw("GET", "/readyz", "", nil, nil); resp.StatusCode != 200 {
		t.Fatalf("readyz while running: %d", resp.StatusCode)
	}
	if err := e.srv.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp := e.raw("GET", "/readyz", "", nil, nil)
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if resp.StatusCode != 503 || !strings.Contains(line, "not running") {
		t.Fatalf("readyz after Stop: %d %s", resp.StatusCode, line)
	}
}

// TestRemoteJobFields: a job with an app is remote, its routing is normalised (XXL-JOB's names
// too), and the API shows both; it carries no "handler not registered here" warning.
func TestRemoteJobFields(t *testing.T) {
	e := newEnv(t, "sqlite")
	var out api.Job
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "r", "handler": "report", "app": "billing", "routing": "SHARDING_BROADCAST"},
		http.StatusCreated, &out)
	if out.Target != "remote" || out.App != "billing" || out.Routing != "sharding_broadcast" || len(out.Warnings) != 0 {
		t.Fatalf("remote job: %+v", out)
	}
	var local api.Job
	e.call("PUT", "/api/v1/jobs/"+strconv.FormatInt(out.ID, 10), map[string]any{"name": "r", "handler": "noop"}, http.StatusOK, &local)
	if local.Target != "local" || local.App != "" || local.Routing != "" {
		t.Fatalf("after making it local: %+v", local)
	}
}

// The store and logger are one setting each, whether given to the server or its scheduler.
func TestConfigSettingsHaveOneValue(t *testing.T) {
	a, b := openStore(t, "sqlite"), openStore(t, "sqlite")
	if _, err := New(Config{Scheduler: sundial.Config{Store: a}}); err != nil {
		t.Errorf("store given to the scheduler only: %v", err)
	}
	if _, err := New(Config{Store: a, Scheduler: sundial.Config{Store: a}}); err != nil {
		t.Errorf("same store twice: %v", err)
	}
	if _, err := New(Config{Store: a, Scheduler: sundial.Config{Store: b}}); err == nil || !strings.Contains(err.Error(), "Config.Scheduler.Store") {
		t.Errorf("two stores: %v, want an error naming Config.Scheduler.Store", err)
	}
	if _, err := New(Config{Store: a, Logger: slog.New(slog.DiscardHandler), Scheduler: sundial.Config{Logger: slog.Default()}}); err == nil {
		t.Error("two loggers: no error")
	}
	local := func(d engine.Dispatcher) engine.Dispatcher { return d }
	if _, err := New(Config{Store: a, Scheduler: sundial.Config{Dispatcher: local}}); err == nil || !strings.Contains(err.Error(), "Dispatcher") {
		t.Errorf("scheduler dispatcher: %v, want an error naming it", err)
	}
}

// TestLoginCSRF: the public routes that change something take only same-origin JSON: a
// cross-site page can neither post a login as text/plain (a form's encoding) nor send one
// with its Origin or Sec-Fetch-Site, and no session cookie is set; a same-origin JSON login
// and a program's (no Origin) work.
func TestLoginCSRF(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		creds := `{"username":"admin","password":"` + e.pw + `"}`
		login := func(contentType string, header ...string) *http.Response {
			t.Helper()
			req, err := http.NewRequest("POST", e.url+"/api/v1/auth/login", strings.NewReader(creds))
			if err != nil {
				t.Fatal(err)
			}
			if contentType != "" {
				req.Header.Set("Content-Type", contentType)
			}
			for i := 0; i < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			return resp
		}
		for _, tc := range []struct {
			what        string
			contentType string
			header      []string
			status      int
		}{
			{"a cross-site form's text/plain", "text/plain", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
			{"text/plain without an Origin", "text/plain", nil, http.StatusUnsupportedMediaType},
			{"a form encoding", "application/x-www-form-urlencoded", nil, http.StatusUnsupportedMediaType},
			{"no content type", "", nil, http.StatusUnsupportedMediaType},
			{"JSON from another origin", "application/json", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
			{"JSON from another site", "application/json", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
			{"same-origin JSON", "application/json; charset=utf-8", []string{"Origin", e.url, "Sec-Fetch-Site", "same-origin"}, http.StatusOK},
			{"a program's JSON", "application/json", nil, http.StatusOK},
		} {
			resp := login(tc.contentType, tc.header...)
			var cookie bool
			for _, c := range resp.Cookies() {
				cookie = cookie || c.Name == sessionCookie
			}
			if resp.StatusCode != tc.status || cookie != (tc.status == http.StatusOK) {
				t.Errorf("%s: status %d, session cookie %v; want %d", tc.what, resp.StatusCode, cookie, tc.status)
			}
		}
		// XXL-JOB's admin API takes its executors' bodies as they are, but not from another site.
		req, _ := http.NewRequest("POST", e.url+"/xxl-job-admin/api/registry", strings.NewReader(`{}`))
		req.Header.Set("Origin", "https://evil.example")
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("XXL-JOB registry from another origin: %v %v, want 403", resp, err)
		} else {
			resp.Body.Close()
		}
		// The password reset is public too.
		req, _ = http.NewRequest("POST", e.url+"/api/v1/auth/reset", strings.NewReader(`{"token":"x","password":"y"}`))
		req.Header.Set("Content-Type", "text/plain")
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("reset as text/plain: %v %v, want 415", resp, err)
		} else {
			resp.Body.Close()
		}
	})
}
