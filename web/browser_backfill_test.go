package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
)

// In Chromium an operator opens a job's Backfill dialog, dry-runs a range (the plan appears
// in the dialog, nothing is stored), starts it, and sees the backfill on the job page and its
// runs' data intervals on their pages.
func TestBrowserBackfill(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	cron, err := sundial.Cron("0 0 2 * * ?", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "nightly", Handler: "echo"}, sundial.Trigger{Schedule: cron})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 900)
	b.login()
	b.do("open the backfill dialog and dry-run two nights",
		chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", h.url, id)),
		chromedp.Click(chromedp.ID("backfill-open")),
		chromedp.WaitVisible(chromedp.ID("backfill-from")),
		fill("backfill-from", "2026-03-01T00:00:00Z"),
		fill("backfill-to", "2026-03-02T23:00:00Z"),
		chromedp.Click(chromedp.ID("backfill-dry-run")),
		chromedp.WaitVisible(chromedp.ID("backfill-plan")))
	if plan := b.text("#backfill-plan"); !strings.Contains(plan, "Dry run: 2 scheduled time(s) in 2 run(s); nothing stored.") {
		t.Fatalf("the plan shown:\n%s", plan)
	}
	// The page shows times in the reader's zone; the instants are in the datetime attributes.
	times, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](
		`[...document.querySelectorAll("#backfill-plan time")].map(t => t.getAttribute("datetime")).join(" ")`))
	if want := "2026-02-28T02:00:00Z 2026-03-01T02:00:00Z 2026-03-01T02:00:00Z 2026-03-02T02:00:00Z"; err != nil || times != want {
		t.Fatalf("the plan's intervals %q (%v), want %q", times, err, want)
	}
	b.screenshot("backfill-plan")
	if bs, err := h.st.BackfillList(ctx, id); err != nil || len(bs) != 0 {
		t.Fatalf("the dry run stored %d backfills (%v)", len(bs), err)
	}
	b.do("start it",
		chromedp.Click(chromedp.ID("backfill-submit")),
		chromedp.WaitVisible(chromedp.ID("backfills")))
	var runs []int64
	for range 2 {
		runs = append(runs, (<-h.ran).execution)
	}
	b.do("open a run", chromedp.Navigate(fmt.Sprintf("%s/executions/%d", h.url, runs[0])), chromedp.WaitVisible(chromedp.ID("exec-interval")))
	iv, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](
		`[...document.querySelectorAll("#exec-interval time")].map(t => t.getAttribute("datetime")).join(" ")`))
	if err != nil || (iv != "2026-02-28T02:00:00Z 2026-03-01T02:00:00Z" && iv != "2026-03-01T02:00:00Z 2026-03-02T02:00:00Z") ||
		!strings.Contains(b.text("#exec-backfill"), "backfill") {
		t.Fatalf("the run's page shows interval %q (%v)", iv, err)
	}
}
