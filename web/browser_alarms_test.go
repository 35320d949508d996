package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
)

// TestBrowserAlarmPolicy: the job editor shows a job's PagerDuty target masked and its alarm
// policy; changing the policy and saving keeps the sealed target (its routing key never
// reaches the page) and stores the new policy, which the job's page then shows.
func TestBrowserAlarmPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	keys, err := secret.Parse("k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("w", secret.KeyLen))))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, "sqlite", func(c *server.Config) { c.Scheduler.Secrets = keys })
	const target = "pagerduty:consoleroutingkey0123456789"
	id, err := h.srv.Scheduler().ScheduleJob(context.Background(), sundial.Job{Name: "paged", Handler: "noop",
		AlarmTargets: []string{target}, AlarmPolicy: sundial.AlarmPolicy{Threshold: 3}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	b.do("open the editor", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d/edit", h.url, id)),
		chromedp.WaitVisible(chromedp.ID("alarm_policy-threshold")))
	b.waitJS("the masked target and the threshold", `document.getElementById("alarm_targets").value === "pagerduty:***" &&
		document.getElementById("alarm_policy-threshold").value === "3" && !document.body.innerHTML.includes("consoleroutingkey")`)
	b.do("set a silence and the recovery notice", fill("alarm_policy-silence_ms", "60000"),
		chromedp.Click(chromedp.ID("alarm_policy-recovery")),
		chromedp.Click(chromedp.CSS(`#job-form button[type=submit]`)))
	b.waitJS("the saved job", `document.querySelector("main .alert")?.textContent === "Job saved."`)
	if got := b.text("#alarm-policy"); got != "after 3 failures in a row, silence 60000 ms, recovery notice" {
		t.Errorf("job page shows the policy as %q", got)
	}
	j, err := h.st.JobGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.AlarmPolicy != (store.AlarmPolicy{Threshold: 3, SilenceMs: int64(time.Minute / time.Millisecond), Recovery: true}) {
		t.Errorf("stored policy %+v", j.AlarmPolicy)
	}
	if len(j.AlarmTargets) != 1 {
		t.Fatalf("stored targets %v", j.AlarmTargets)
	}
	if plain, err := alarm.OpenTarget(keys, j.AlarmTargets[0]); err != nil || plain != target {
		t.Errorf("stored target opens to %q (%v), want %q kept", plain, err, target)
	}
}
