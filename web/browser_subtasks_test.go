package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// In Chromium the page of a map/reduce run shows its sub-task counts by state and a page of
// its sub-tasks linked to the run, with a link to the next page.
func TestBrowserSubtasks(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "mr", Handler: "mr"})
	if err != nil {
		t.Fatal(err)
	}
	x := &store.Execution{JobID: id, ScheduledAt: 5, FiredAt: 5, Cause: store.CauseManual, State: store.ExecRunning, Node: "gone"}
	if _, err := h.st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil {
		t.Fatal(err)
	}
	ts := make([]*store.Subtask, 60)
	for i := range ts {
		ts[i] = &store.Subtask{Depth: 1, Seq: i, Payload: fmt.Sprintf(`{"part":%d}`, i)}
	}
	if _, err := h.st.SubtasksMap(ctx, &store.SubtaskMap{ExecutionID: x.ID, JobID: id, Handler: "mr"}, ts, 0); err != nil {
		t.Fatal(err)
	}
	claimed, err := h.st.SubtasksClaim(ctx, "n/1", []string{"mr"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.SubtasksComplete(ctx, []store.SubtaskResult{{ID: claimed[0].ID, Attempt: 1, Owner: "n/1",
		State: store.SubtaskSucceeded, Result: `{"rows":42}`}}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 900)
	b.login()
	b.do("open the run", chromedp.Navigate(fmt.Sprintf("%s/executions/%d", h.url, x.ID)), chromedp.WaitVisible(chromedp.ID("subtasks")))
	if got := strings.Join(strings.Fields(b.text("#subtask-counts")), " "); got != "pending 58 running 1 succeeded 1" {
		t.Fatalf("counts shown %q", got)
	}
	rows := b.text("#subtask-rows")
	if !strings.Contains(rows, `{"rows":42}`) || !strings.Contains(rows, fmt.Sprintf("run #%d", x.ID)) || !strings.Contains(rows, `{"part":49}`) ||
		strings.Contains(rows, `{"part":50}`) {
		t.Fatalf("first page of sub-tasks:\n%s", rows)
	}
	b.screenshot("subtasks")
	// The last page has no next link: waiting for it to go waits for the new page.
	b.do("next page", chromedp.Click(chromedp.ID("subtasks-next")), chromedp.WaitNotPresent("#subtasks-next"), chromedp.WaitVisible(chromedp.ID("subtasks")))
	if rows := b.text("#subtask-rows"); !strings.Contains(rows, `{"part":59}`) || strings.Contains(rows, `{"part":49}`) {
		t.Fatalf("second page of sub-tasks:\n%s", rows)
	}
}
