package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

func TestLoginRequiredAndHeaders(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	p := c.get("/jobs?q=x").mustStatus(t, http.StatusSeeOther)
	if loc := p.header.Get("Location"); loc != "/login?next="+url.QueryEscape("/jobs?q=x") {
		t.Fatalf("redirect to %q", loc)
	}
	lp := c.get("/login").mustStatus(t, http.StatusOK)
	csp := lp.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Fatalf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Fatalf("CSP allows unsafe sources: %q", csp)
	}
	// A wrong password shows the API's message and sets no session.
	bad := c.post("/login", csrfOf(t, lp), url.Values{"username": {adminName}, "password": {"nope"}})
	bad.mustStatus(t, http.StatusOK).mustContain(t, "wrong user name or password")
	// A login without the form's token is refused.
	c.do("POST", "/login", url.Values{"username": {adminName}, "password": {adminPass}}, nil).mustContain(t, "form expired")
	u, _ := url.Parse(h.url)
	for _, ck := range c.hc.Jar.Cookies(u) {
		if ck.Name == "sundial_session" {
			t.Fatal("a refused login set a session")
		}
	}

	csrf := c.login()
	var session *http.Cookie
	for _, ck := range c.hc.Jar.Cookies(u) {
		if ck.Name == "sundial_session" {
			session = ck
		}
	}
	if session == nil {
		t.Fatal("no session cookie after login")
	}
	c.get("/").mustStatus(t, http.StatusOK).mustContain(t, "Executions per day", `name="csrf-token"`)

	// An unsafe request without the token, or with another session's, changes nothing.
	c.do("POST", "/jobs/new", url.Values{"name": {"x"}}, nil).mustStatus(t, http.StatusForbidden)
	other := h.client()
	otherCSRF := other.login()
	if otherCSRF == csrf {
		t.Fatal("two sessions share a CSRF token")
	}
	c.post("/jobs/new", otherCSRF, url.Values{"name": {"x"}, "handler": {"noop"}}).mustStatus(t, http.StatusForbidden)
	// htmx sends the token as a header.
	c.do("POST", "/jobs/bulk", url.Values{"action": {"pause"}}, map[string]string{"X-CSRF-Token": csrf}).mustStatus(t, http.StatusSeeOther)
	if js, _ := h.st.JobList(context.Background(), store.JobFilter{}); len(js) != 0 {
		t.Fatalf("refused requests stored %d jobs", len(js))
	}

	// Logout ends the session: the old cookie no longer opens pages.
	c.post("/logout", csrf, nil).mustStatus(t, http.StatusSeeOther)
	c.get("/").mustStatus(t, http.StatusSeeOther)
}

func TestStaticAssetsEmbedded(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	for _, path := range []string{"/static/vendor/htmx.org-2.0.11/htmx.min.js", "/static/vendor/uplot-1.6.32/uPlot.iife.min.js",
		"/static/vendor/dagre-3.1.3/dagre.min.js", "/static/vendor/dagre-3.1.3/LICENSE", "/static/console/workflow.js",
		"/static/vendor/codemirror-5.65.20/codemirror.js", "/static/vendor/htmx.org-2.0.11/LICENSE",
		"/static/console/app.js", "/static/console/app.css"} {
		p := c.get(path).mustStatus(t, http.StatusOK)
		if len(p.body) < 100 {
			t.Fatalf("%s: %d bytes", path, len(p.body))
		}
	}
	// The API keeps its JSON 404 beside the console.
	c.get("/api/v1/nope").mustStatus(t, http.StatusUnauthorized)
}

func TestJobFormErrorsAtFieldStoreNothing(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	for _, tc := range []struct {
		form  url.Values
		field string // the id of the error's slot
		msg   string
	}{
		{url.Values{"name": {"bad-cron"}, "triggers[0].cron": {"0 0 25 * * ?"}}, "err-triggers-0-cron", "cron expression"},
		{url.Values{"name": {""}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-name", "must not be empty"},
		{url.Values{"name": {"neg"}, "max_retries": {"-1"}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-max_retries", "got -1"},
		{url.Values{"name": {"words"}, "timeout_ms": {"soon"}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-timeout_ms", "want a whole number"},
		{url.Values{"name": {"zone"}, "triggers[0].cron": {"0 0 * * * ?"}, "triggers[0].time_zone": {"Mars/Olympus"}}, "err-triggers-0-time_zone", "Mars/Olympus"},
		{url.Values{"name": {"alarm"}, "alarm_targets": {"ops@example.com\nnot a target"}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-alarm_targets", "not a target"},
		{url.Values{"name": {"window"}, "alarm_policy.window_ms": {"60000"}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-alarm_policy-window_ms", "threshold"},
		{url.Values{"name": {"slack"}, "alarm_targets": {"slack:https://hooks.slack.com/services/T/B/X"}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-alarm_targets", "secret key"},
		{url.Values{"name": {"kids"}, "child_job_ids": {"1, x"}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-child_job_ids", "want job ids"},
		{url.Values{"name": {"kids"}, "child_job_ids": {"424242"}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-child_job_ids", "no job 424242"},
		{url.Values{"name": {"   "}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-name", "must not be"},
		{url.Values{"name": {"gnp\u202eexe"}, "triggers[0].cron": {"0 0 * * * ?"}}, "err-name", "invisible format characters"},
	} {
		p := c.createJob(csrf, tc.form).mustStatus(t, http.StatusOK)
		i := strings.Index(p.body, `id="`+tc.field+`"`)
		if i < 0 {
			t.Fatalf("%v: no error slot %s:\n%s", tc.form, tc.field, p.body)
		}
		slot := p.body[i:min(len(p.body), i+400)]
		slot = slot[:strings.Index(slot, "</p>")]
		if !strings.Contains(slot, tc.msg) {
			t.Fatalf("%v: error slot %s is %q, want %q in it", tc.form, tc.field, slot, tc.msg)
		}
		// The form keeps what was typed.
		if name := tc.form.Get("name"); name != "" && !strings.Contains(p.body, `value="`+name+`"`) {
			t.Fatalf("%v: the form lost the name %q", tc.form, name)
		}
	}
	if js, _ := h.st.JobList(context.Background(), store.JobFilter{}); len(js) != 0 {
		t.Fatalf("bad forms stored %d jobs", len(js))
	}
	// A duplicate name is the API's conflict, shown at the name.
	jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"dup"}, "triggers[0].cron": {"0 0 * * * ?"}}))
	p := c.createJob(csrf, url.Values{"name": {"dup"}, "triggers[0].cron": {"0 0 * * * ?"}}).mustStatus(t, http.StatusOK)
	p.mustContain(t, `id="err-name" role="alert">`, "already exists")

	// Child jobs round-trip through the form: stored, shown on the job, and back in the editor.
	child := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"child"}, "triggers[0].cron": {"0 0 * * * ?"}}))
	parent := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"parent"}, "child_job_ids": {fmt.Sprintf(" %d ,", child)}, "triggers[0].cron": {"0 0 * * * ?"}}))
	c.get(fmt.Sprintf("/jobs/%d", parent)).mustContain(t, fmt.Sprintf(`<a href="/jobs/%d">job %d</a>`, child, child))
	c.get(fmt.Sprintf("/jobs/%d/edit", parent)).mustContain(t, fmt.Sprintf(`value="%d"`, child))
}

func TestPreviewShowsTimesAndErrors(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	q := url.Values{"prefix": {"triggers[0]."}, "triggers[0].kind": {"cron"}, "triggers[0].cron": {"0 30 1 ? * SUN"},
		"triggers[0].time_zone": {"America/New_York"}, "triggers[0].start": {"2026-03-01T00:00:00Z"}}
	p := c.do("GET", "/preview?"+q.Encode(), nil, map[string]string{"HX-Request": "true"}).mustStatus(t, http.StatusOK)
	p.mustContain(t, "Sun 2026-03-01 01:30:00 EST", "Sun 2026-03-08 01:30:00 EST", "Sun 2026-03-15 01:30:00 EDT",
		`id="err-triggers-0-cron" role="alert" hx-swap-oob="true"></p>`)
	if n := strings.Count(p.body, "<li"); n != 10 {
		t.Fatalf("%d times previewed, want 10:\n%s", n, p.body)
	}
	// 02:30 does not exist on 2026-03-08 in New York: Quartz skips that day, and the next
	// fire says why.
	q.Set("triggers[0].cron", "0 30 2 ? * SUN")
	c.do("GET", "/preview?"+q.Encode(), nil, nil).mustContain(t,
		"Sun 2026-03-15 02:30:00 EDT <span class=\"note\">— the clocks went forward 1 h at 2026-03-08 03:00 EDT (DST gap)")
	// 01:30 occurs twice on 2026-11-01.
	q.Set("triggers[0].cron", "0 30 1 1 NOV ?")
	c.do("GET", "/preview?"+q.Encode(), nil, nil).mustContain(t, "2026-11-01 01:30:00 EST", "DST overlap")
	// A bad expression is shown at the field, out of band.
	q.Set("triggers[0].cron", "0 0 25 * * ?")
	c.do("GET", "/preview?"+q.Encode(), nil, nil).mustContain(t, `id="err-triggers-0-cron" role="alert" hx-swap-oob="true">cron expression`)
	// A simple schedule is checked as the API checks it: the error is at the field the API names.
	q.Set("triggers[0].kind", "simple")
	q.Set("triggers[0].every_ms", "1000")
	q.Set("triggers[0].repeat", "-2")
	c.do("GET", "/preview?"+q.Encode(), nil, nil).mustContain(t, `id="err-triggers-0-repeat" role="alert" hx-swap-oob="true">want -1 (forever) or a count of repeats, got -2`)
	q.Set("triggers[0].kind", "cron")
	// Quartz's lenient reading is told.
	q.Set("triggers[0].cron", "0 0 12 ? * MON/2")
	if p := c.do("GET", "/preview?"+q.Encode(), nil, nil); !strings.Contains(p.body, "Quartz reads this as") {
		t.Fatalf("no leniency warning:\n%s", p.body)
	}
}

func TestEveryPageRenders(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	id := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"nightly"}, "triggers[0].cron": {"0 0 2 * * ?"}}))
	run := c.post(fmt.Sprintf("/jobs/%d/run", id), csrf, nil).mustStatus(t, http.StatusSeeOther)
	c.post("/calendars", csrf, url.Values{"name": {"holidays"}, "spec": {"holiday:2026-12-25"}}).mustStatus(t, http.StatusSeeOther)
	for _, path := range []string{"/", "/jobs", "/jobs?q=night&state=enabled", "/jobs/new", fmt.Sprintf("/jobs/%d", id),
		fmt.Sprintf("/jobs/%d/edit", id), fmt.Sprintf("/jobs/%d/copy", id), "/executions", "/executions?state=pending&cause=manual&from=2026-01-01T00:00", run.header.Get("Location"),
		"/apps", "/nodes", "/calendars?name=holidays&month=2026-12", "/users", "/users/1", "/account"} {
		c.get(path).mustStatus(t, http.StatusOK)
	}
	c.get("/calendars?name=holidays&month=2026-12").mustContain(t, `class="all" title="excluded all day">25<`)
	// A calendar with a zone of its own: its month is shown in that zone, where Christmas is
	// whole (in UTC it would be parts of the 24th and the 25th); a bad zone is shown at its field.
	c.post("/calendars", csrf, url.Values{"name": {"tokyo"}, "spec": {"holiday:2026-12-25"}, "zone": {"Asia/Tokyo"}}).mustStatus(t, http.StatusSeeOther)
	c.get("/calendars?name=tokyo&month=2026-12").mustContain(t, `class="all" title="excluded all day">25<`).
		mustContain(t, "(Asia/Tokyo)").mustContain(t, `value="Asia/Tokyo"`)
	c.post("/calendars", csrf, url.Values{"name": {"bad"}, "spec": {"weekly:1,7"}, "zone": {"Mars/Olympus"}}).
		mustStatus(t, http.StatusOK).mustContain(t, `time zone &#34;Mars/Olympus&#34;: unknown zone`)
	c.get("/nope").mustStatus(t, http.StatusNotFound)
	c.get("/jobs/999999").mustStatus(t, http.StatusNotFound)
}

func TestTokenShownOnce(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	p := c.post("/tokens", csrf, url.Values{"token-name": {"ci"}}).mustStatus(t, http.StatusOK)
	p.mustContain(t, "it is not shown again", "sdl_")
	c.get("/tokens").mustStatus(t, http.StatusSeeOther)
	again := c.get("/users").mustStatus(t, http.StatusOK).mustContain(t, ">ci<")
	if strings.Contains(again.body, `id="new-token"`) {
		t.Fatal("the token's secret is shown again")
	}
}

func TestChangePasswordErrorsAtField(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	p := c.post("/account/password", csrf, url.Values{"current_password": {"wrong"}, "new_password": {"a long new password"},
		"confirm_password": {"a long new password"}}).mustStatus(t, http.StatusOK)
	p.mustContain(t, `id="err-current_password" role="alert">does not match`)
	p = c.post("/account/password", csrf, url.Values{"current_password": {adminPass}, "new_password": {"short"},
		"confirm_password": {"short"}}).mustStatus(t, http.StatusOK)
	p.mustContain(t, `id="err-new_password" role="alert">must have at least 12`)
	c.post("/account/password", csrf, url.Values{"current_password": {adminPass}, "new_password": {"a long new password"},
		"confirm_password": {"a long new password"}}).mustStatus(t, http.StatusOK).mustContain(t, "Password changed.")
}

func TestEditJobAndTriggers(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	ctx := context.Background()
	id := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"edited"}, "triggers[0].cron": {"0 0 2 * * ?"},
		"data": {`{"region": "eu"}`}, "alarm_targets": {"ops@example.com"}}))
	edit := c.get(fmt.Sprintf("/jobs/%d/edit", id)).mustStatus(t, http.StatusOK)
	edit.mustContain(t, `value="edited"`, "ops@example.com", "&#34;region&#34;: &#34;eu&#34;")

	form := url.Values{"group": {"default"}, "name": {"edited"}, "handler": {"noop"}, "timeout_ms": {"-5"}}
	c.post(fmt.Sprintf("/jobs/%d/edit", id), csrf, form).mustContain(t, `id="err-timeout_ms" role="alert">must not be negative`)
	if j, _ := h.st.JobGet(ctx, id); j.TimeoutMs != 0 || len(j.AlarmTargets) != 1 {
		t.Fatalf("a refused edit changed the job: %+v", j)
	}
	form.Set("timeout_ms", "1500")
	c.post(fmt.Sprintf("/jobs/%d/edit", id), csrf, form).mustStatus(t, http.StatusSeeOther)
	if j, _ := h.st.JobGet(ctx, id); j.TimeoutMs != 1500 || len(j.AlarmTargets) != 0 {
		t.Fatalf("after the edit: %+v", j)
	}

	add := url.Values{"kind": {"cron"}, "cron": {"0 0 25 * * ?"}, "time_zone": {"UTC"}}
	c.post(fmt.Sprintf("/jobs/%d/triggers", id), csrf, add).mustContain(t, `id="err-cron" role="alert">cron expression`)
	add = url.Values{"kind": {"daily_interval"}, "daily_interval.from": {"09:00"}, "daily_interval.to": {"17:00"},
		"daily_interval.interval": {"30"}, "daily_interval.unit": {"MINUTE"}, "daily_interval.days": {"MON,TUE"}, "time_zone": {"Asia/Tokyo"}}
	c.post(fmt.Sprintf("/jobs/%d/triggers", id), csrf, add).mustStatus(t, http.StatusSeeOther)
	ts, _ := h.st.TriggerList(ctx, store.TriggerFilter{JobID: id})
	if len(ts) != 2 || ts[1].Kind != store.TriggerDailyInterval || ts[1].TimeZone != "Asia/Tokyo" {
		t.Fatalf("triggers after the add: %+v", ts)
	}
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, "09:00:00–17:00:00 every 30 minutes (Asia/Tokyo)")
	for _, a := range []string{"pause", "resume", "delete"} {
		c.post(fmt.Sprintf("/triggers/%d/%s", ts[1].ID, a), csrf, nil).mustStatus(t, http.StatusSeeOther)
	}
	if ts, _ := h.st.TriggerList(ctx, store.TriggerFilter{JobID: id}); len(ts) != 1 {
		t.Fatalf("%d triggers after the delete", len(ts))
	}
	c.get(fmt.Sprintf("/jobs/%d/copy", id)).mustContain(t, `value="copy of edited"`, `value="0 0 2 * * ?"`)
	c.post(fmt.Sprintf("/jobs/%d/delete", id), csrf, nil).mustStatus(t, http.StatusSeeOther)
	if _, err := h.st.JobGet(ctx, id); err == nil {
		t.Fatal("the job survived its delete")
	}
}

// TestAppsPageWarnsOfClearSecrets (issue 20, item 13): the apps page warns at a manual app
// with secret-param jobs and an http:// address, and not at one whose addresses use TLS.
func TestAppsPageWarnsOfClearSecrets(t *testing.T) {
	h := newHarness(t, "sqlite")
	ctx := context.Background()
	for name, addr := range map[string]string{"plain": "http://10.0.0.5:9999", "tls": "https://10.0.0.6:9999"} {
		if err := h.st.AppPut(ctx, &store.App{Name: name, AddressMode: store.AddressManual, Addresses: []string{addr}}); err != nil {
			t.Fatal(err)
		}
		j := &store.Job{Group: "g", Name: name + "-backup", TargetKind: store.TargetRemote, App: name, Handler: "backup",
			Params: "sealed", ParamsSecret: true, Concurrency: store.ConcurrencyAllow, Enabled: true}
		if err := h.st.JobInsert(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	c := h.client()
	c.login()
	p := c.get("/apps").mustStatus(t, http.StatusOK).mustContain(t, `class="alert warn"`, "app plain has jobs with secret params", "http://10.0.0.5:9999")
	if strings.Count(p.body, `class="alert warn"`) != 1 {
		t.Fatalf("want one warning, at the plain app:\n%s", p.body)
	}
}

// TestDashboardShowsNodeLoad: the dashboard's cluster panel tells how this node keeps up
// with its fires (lateness, fires waiting, heartbeat age), from the node list's load.
func TestDashboardShowsNodeLoad(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	c.get("/").mustStatus(t, http.StatusOK).mustContain(t, `aria-label="This node's load"`,
		`<dd id="load-backlog">0</dd>`, `<dd id="load-late">`, " ms ago</dd>")
}
