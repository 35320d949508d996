package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sundial-scheduler/sundial/store"
)

// A user limited to some apps sees, on every page, the jobs, runs and next fires of those apps
// (and of no app), and is refused another app's job, editor and run, as the API refuses them.
func TestScopeLimitsPages(t *testing.T) {
	h := newHarness(t, "sqlite")
	ctx := context.Background()
	now := time.Now().UnixMilli()
	jobOf := func(name, app string) *store.Job {
		j := &store.Job{Group: "default", Name: name, TargetKind: store.TargetRemote, Handler: "noop", App: app, Enabled: true}
		if err := h.st.JobInsert(ctx, j); err != nil {
			t.Fatal(err)
		}
		tr := &store.Trigger{JobID: j.ID, Group: "default", Name: name, Kind: store.TriggerSimple, Spec: `{"interval_ms":3600000}`,
			StartAt: now + 60_000, NextFireAt: now + 60_000}
		if err := h.st.TriggerInsert(ctx, tr); err != nil {
			t.Fatal(err)
		}
		return j
	}
	bill, mail := jobOf("billing-run", "billing"), jobOf("mail-secret-job", "mail")
	runOf := func(j *store.Job) *store.Execution {
		return &store.Execution{JobID: j.ID, ScheduledAt: now - 1000, FiredAt: now - 1000, StartedAt: now - 1000, FinishedAt: now - 500,
			Cause: store.CauseManual, State: store.ExecFailed, AlarmState: store.AlarmNone, HandleMsg: "boom"}
	}
	runs := []*store.Execution{runOf(bill), runOf(mail)}
	if _, err := h.st.ExecutionsInsert(ctx, runs); err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("otto's long password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.UserInsert(ctx, &store.User{Name: "otto", PasswordHash: string(hash), Role: store.RoleOperator, Scope: "billing"}); err != nil {
		t.Fatal(err)
	}

	admin, otto := h.client(), h.client()
	admin.login()
	csrf := otto.loginAs("otto", "otto's long password")
	for _, p := range []string{"/", "/jobs", "/executions", "/executions?state=failed"} {
		// The admin's page has both jobs, so the operator's lacking one is the scope at work.
		admin.get(p).mustStatus(t, http.StatusOK).mustContain(t, "billing-run", "mail-secret-job")
		got := otto.get(p).mustStatus(t, http.StatusOK).mustContain(t, "billing-run")
		if strings.Contains(got.body, "mail-secret-job") {
			t.Fatalf("%s shows the operator of billing the mail job:\n%s", p, got.body)
		}
	}
	for _, p := range []string{"/jobs/" + itoa(mail.ID), "/jobs/" + itoa(mail.ID) + "/edit", "/executions/" + itoa(runs[1].ID)} {
		otto.get(p).mustStatus(t, http.StatusForbidden).mustContain(t, "outside your scope of apps")
	}
	otto.get("/executions/"+itoa(runs[0].ID)).mustStatus(t, http.StatusOK).mustContain(t, "billing-run", "boom")
	otto.get("/jobs/"+itoa(bill.ID)).mustStatus(t, http.StatusOK)

	// A child job is one the user may run: the editor shows the refusal at the field.
	p := otto.createJob(csrf, url.Values{"name": {"chained"}, "app": {"billing"}, "child_job_ids": {itoa(mail.ID)},
		"triggers[0].cron": {"0 0 * * * ?"}}).mustStatus(t, http.StatusOK)
	if i := strings.Index(p.body, `id="err-child_job_ids"`); i < 0 || !strings.Contains(p.body[i:min(len(p.body), i+400)], "outside your scope") {
		t.Fatalf("a child job of another app: no refusal at child_job_ids:\n%s", p.body)
	}
}
