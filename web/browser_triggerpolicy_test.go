package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// TestBrowserTriggerPolicies: on the job page, a stored trigger's Policies form changes its
// catch-up window and mode, jitter, DST and misfire policies (through the op PATCH
// /triggers/{id} uses); the page then shows them and the database holds them.
func TestBrowserTriggerPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	h := newHarness(t, "sqlite")
	ctx := context.Background()
	cron, err := sundial.Cron("0 30 2 * * ?", "America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "edited", Handler: "noop"}, sundial.Trigger{Schedule: cron})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := h.st.TriggerList(ctx, store.TriggerFilter{JobID: id})
	if err != nil || len(ts) != 1 {
		t.Fatalf("triggers %v, %v", ts, err)
	}
	tid := ts[0].ID
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	sel := func(name string) string { return fmt.Sprintf("tp-%d-%s", tid, name) }
	b.do("open the trigger's policies", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", h.url, id)),
		chromedp.WaitVisible(chromedp.CSS("details.trigger-policy summary")),
		chromedp.Click(chromedp.CSS("details.trigger-policy summary")),
		chromedp.WaitVisible(chromedp.ID(sel("catchup_window"))))
	b.do("set the policies", fill(sel("catchup_window"), "4h"), fill(sel("jitter_ms"), "30000"),
		chromedp.SetValue(chromedp.ID(sel("catchup")), "coalesce"),
		chromedp.SetValue(chromedp.ID(sel("dst")), "once"),
		chromedp.SetValue(chromedp.ID(sel("misfire")), "do_nothing"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf("#tp-%d button[type=submit]", tid))))
	b.waitJS("the saved policies", `document.querySelector("main .alert")?.textContent === "Trigger policies saved."`)
	got, err := h.st.TriggerGet(ctx, tid)
	if err != nil {
		t.Fatal(err)
	}
	if got.CatchUpWindow != (4*time.Hour).Milliseconds() || got.CatchUp != "coalesce" || got.JitterMs != 30000 ||
		got.DSTPolicy != "once" || got.MisfirePolicy != "do_nothing" {
		t.Errorf("stored trigger %+v", got)
	}
	b.waitJS("the page shows them", `document.body.textContent.includes("jitter up to 30000 ms") &&
		document.body.textContent.includes("DST once") && document.body.textContent.includes("catch-up coalesce")`)
}
