package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// Issue 22, item 20: the console's small things, each as a page shows it.

// storeJob inserts a job of group/name with one trigger in state (none for "").
func storeJob(t *testing.T, h *harness, group, name, params string, state store.TriggerState) *store.Job {
	t.Helper()
	ctx := context.Background()
	j := &store.Job{Group: group, Name: name, TargetKind: store.TargetLocal, Handler: "noop", Params: params, Enabled: true}
	if err := h.st.JobInsert(ctx, j); err != nil {
		t.Fatal(err)
	}
	if state != "" {
		now := time.Now().UnixMilli()
		tr := &store.Trigger{JobID: j.ID, Group: group, Name: name, Kind: store.TriggerSimple, Spec: `{"interval_ms":3600000}`,
			StartAt: now + 60_000, NextFireAt: now + 60_000, State: state}
		if err := h.st.TriggerInsert(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

func storeRun(t *testing.T, h *harness, x *store.Execution) *store.Execution {
	t.Helper()
	if x.Cause == "" {
		x.Cause = store.CauseManual
	}
	if x.AlarmState == "" {
		x.AlarmState = store.AlarmNone
	}
	if _, err := h.st.ExecutionsInsert(context.Background(), []*store.Execution{x}); err != nil {
		t.Fatal(err)
	}
	return x
}

// The executions' job filter takes an id, a name or group/name, and refuses (400, said at the
// filter, nothing listed) a name no job has or several have, and a parameter it does not know.
func TestExecutionsJobFilter(t *testing.T) {
	h := newHarness(t, "sqlite")
	now := time.Now().UnixMilli()
	nightly := storeJob(t, h, "reports", "nightly", "", "")
	storeJob(t, h, "other", "twin", "", "")
	storeJob(t, h, "more", "twin", "", "")
	mail := storeJob(t, h, "default", "mail", "", "")
	storeRun(t, h, &store.Execution{JobID: nightly.ID, FiredAt: now, ScheduledAt: now, State: store.ExecSucceeded, HandleMsg: "nightly-run"})
	storeRun(t, h, &store.Execution{JobID: mail.ID, FiredAt: now, ScheduledAt: now, State: store.ExecSucceeded, HandleMsg: "mail-run"})
	c := h.client()
	c.login()
	for _, q := range []string{"job=nightly", "job=reports/nightly", "job=" + itoa(nightly.ID), "job_id=nightly", "job_id=" + itoa(nightly.ID)} {
		p := c.get("/executions?"+q).mustStatus(t, http.StatusOK).mustContain(t, "reports/nightly")
		if strings.Contains(p.body, "default/mail") {
			t.Errorf("?%s lists the mail job's run", q)
		}
	}
	for q, want := range map[string]string{
		"job_id=abc":                             `no job is named &#34;abc&#34;`,
		"job=twin":                               `2 jobs are named &#34;twin&#34;`,
		"job=0":                                  "want a job id, name or group/name",
		"jobid=3":                                "jobid: no such filter",
		"job=nightly&state=succeeded&colour=red": "colour: no such filter",
	} {
		p := c.get("/executions?"+q).mustStatus(t, http.StatusBadRequest).mustContain(t, want)
		if strings.Contains(p.body, "reports/nightly") || strings.Contains(p.body, "default/mail") {
			t.Errorf("?%s: a refused filter still lists runs", q)
		}
	}
	// The refusal is at the filter, whose value stays to be corrected.
	c.get("/executions?job_id=abc").mustContain(t, `id="err-f-job"`, `aria-invalid="true"`, `value="abc"`, `nav class="main"`)
}

// An error page (a page that does not exist, a job id that is no number) has the menu.
func TestErrorPageHasTheMenu(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	for _, p := range []string{"/no-such-page", "/jobs/abc", "/jobs/999999", "/apps/nobody"} {
		c.get(p).mustStatus(t, http.StatusNotFound).mustContain(t, `nav class="main"`, `href="/executions"`, "Sign out")
	}
}

// A job whose triggers have all completed offers neither Pause nor Resume; a waiting one
// Pause, a paused one Resume.
func TestJobPauseResumeButtons(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	for _, tc := range []struct {
		state         store.TriggerState
		pause, resume bool
	}{{store.TriggerComplete, false, false}, {"", false, false}, {store.TriggerWaiting, true, false}, {store.TriggerPaused, false, true}} {
		j := storeJob(t, h, "default", "job-"+string(tc.state), "", tc.state)
		p := c.get("/jobs/"+itoa(j.ID)).mustStatus(t, http.StatusOK)
		if got := strings.Contains(p.body, `id="pause-job"`); got != tc.pause {
			t.Errorf("trigger %q: Pause shown %v, want %v", tc.state, got, tc.pause)
		}
		if got := strings.Contains(p.body, `id="resume-job"`); got != tc.resume {
			t.Errorf("trigger %q: Resume shown %v, want %v", tc.state, got, tc.resume)
		}
	}
}

// 60 KB of parameters are folded on the job's and the run's page: the start in sight, the
// whole behind a disclosure; short ones are shown as they are.
func TestLongParamsFolded(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	long := "--rows=" + strings.Repeat("0123456789abcdef", 60*1024/16)
	j := storeJob(t, h, "default", "bulk", long, "")
	p := c.get("/jobs/"+itoa(j.ID)).mustStatus(t, http.StatusOK).mustContain(t, `<details class="fold" id="job-params-fold">`, "(show all 60 KB)")
	if i := strings.Index(p.body, "<summary>"); i < 0 || strings.Count(p.body[i:strings.Index(p.body[i:], "</summary>")+i], "0123456789abcdef") > 6 {
		t.Errorf("the folded parameters' summary is not short")
	}
	now := time.Now().UnixMilli()
	x := storeRun(t, h, &store.Execution{JobID: j.ID, FiredAt: now, ScheduledAt: now, StartedAt: now, FinishedAt: now + 5,
		State: store.ExecSucceeded, Params: long})
	c.get("/executions/"+itoa(x.ID)).mustStatus(t, http.StatusOK).mustContain(t, `id="exec-params-fold"`, "(show all 60 KB)")
	short := storeJob(t, h, "default", "small", "--month=11", "")
	p = c.get("/jobs/"+itoa(short.ID)).mustStatus(t, http.StatusOK).mustContain(t, `id="job-params">--month=11</pre>`)
	if strings.Contains(p.body, `class="fold"`) {
		t.Error("short parameters are folded")
	}
}

// A run's page says what it knows: a run that ended without a message has none (not "none
// yet"), and a remote run the executor has not reported a start of says so, not "–".
func TestRunPageResultAndStart(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	j := storeJob(t, h, "default", "quiet", "", "")
	now := time.Now().UnixMilli()
	done := storeRun(t, h, &store.Execution{JobID: j.ID, FiredAt: now, ScheduledAt: now, StartedAt: now, FinishedAt: now + 5,
		State: store.ExecSucceeded, HandleCode: 200})
	p := c.get("/executions/"+itoa(done.ID)).mustStatus(t, http.StatusOK)
	if !strings.Contains(p.body, `id="exec-result"><span class="muted">no message</span> <span class="muted">(code 200)</span>`) ||
		strings.Contains(p.body, "none yet") {
		t.Errorf("an ended run's result:\n%s", between(p.body, `id="exec-result"`, "</dd>"))
	}
	running := storeRun(t, h, &store.Execution{JobID: j.ID, FiredAt: now, ScheduledAt: now, State: store.ExecRunning,
		ExecutorAddress: "http://10.0.0.5:9999", ExecutorApp: "billing"})
	p = c.get("/executions/"+itoa(running.ID)).mustStatus(t, http.StatusOK)
	if s := between(p.body, `id="exec-started"`, "</dd>"); !strings.Contains(s, "not reported yet") || !strings.Contains(s, "<time") {
		t.Errorf("a running remote run's start: %q", s)
	}
	if s := between(p.body, `id="exec-result"`, "</dd>"); !strings.Contains(s, "none yet") {
		t.Errorf("a running run's result: %q", s)
	}
}

// A calendar is deleted from its page; one a trigger uses is refused, saying why; a viewer
// is refused by the operation.
func TestCalendarDelete(t *testing.T) {
	h := newHarness(t, "sqlite")
	ctx := context.Background()
	sched := h.srv.Scheduler()
	for _, name := range []string{"holidays", "used"} {
		if err := sched.PutCalendar(ctx, sundial.Calendar{Name: name, Spec: "holiday:2026-12-25"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sched.ScheduleJob(ctx, sundial.Job{Name: "uses-it", Handler: "noop"},
		sundial.Trigger{Schedule: mustCron(t, "0 0 2 * * ?"), Calendar: "used"}); err != nil {
		t.Fatal(err)
	}
	h.addUser("vera", "vera's long password", store.RoleViewer, "*")
	viewer := h.client()
	vcsrf := viewer.loginAs("vera", "vera's long password")
	if p := viewer.get("/calendars?name=holidays").mustStatus(t, http.StatusOK); strings.Contains(p.body, `id="delete-calendar"`) {
		t.Error("a viewer is offered the delete")
	}
	viewer.post("/calendars/delete", vcsrf, url.Values{"name": {"holidays"}}).mustStatus(t, http.StatusForbidden)

	c := h.client()
	csrf := c.login()
	c.get("/calendars?name=holidays").mustStatus(t, http.StatusOK).mustContain(t, `id="delete-calendar"`)
	c.post("/calendars/delete", csrf, url.Values{"name": {"used"}}).mustStatus(t, http.StatusOK).mustContain(t, `class="alert error"`, "in use")
	c.post("/calendars/delete", csrf, url.Values{"name": {"holidays"}}).mustStatus(t, http.StatusSeeOther)
	p := c.get("/calendars?done=calendar-deleted").mustStatus(t, http.StatusOK).mustContain(t, "Calendar deleted.")
	if strings.Contains(p.body, "holidays") {
		t.Error("the deleted calendar is still listed")
	}
	if _, err := h.st.CalendarGet(ctx, "used"); err != nil {
		t.Fatalf("the calendar in use: %v", err)
	}
}

// between is the text of s from the first from to the next to.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j]
}
