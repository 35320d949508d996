package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// brokenWorkflow stores a workflow whose first node's job always fails (bad -> next) and
// starts a run of it, returning the run's page.
func brokenWorkflow(t *testing.T, h *harness, c *client, csrf string) string {
	t.Helper()
	ctx := context.Background()
	h.srv.Register("failer", func(ctx context.Context) error { return errors.New("source unreachable") })
	bad, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "bad-extract", Handler: "failer"})
	if err != nil {
		t.Fatal(err)
	}
	next, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "after-extract", Handler: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	graph := fmt.Sprintf(`{"nodes":[{"name":"bad","job_id":%d},{"name":"next","job_id":%d}],"edges":[{"from":"bad","to":"next"}]}`, bad, next)
	if err := h.st.WorkflowInsert(ctx, &store.Workflow{Name: "fragile", Graph: graph}); err != nil {
		t.Fatal(err)
	}
	run := c.post("/workflows/fragile/run", csrf, nil).mustStatus(t, http.StatusSeeOther)
	return run.header.Get("Location")
}

// In Chromium an operator opens a failed workflow run: it offers Retry from failed and, on the
// failed node, Retry and Mark succeeded. Marking the node succeeded starts the node after it
// and the run ends succeeded, with the buttons gone. A viewer's page of the same run offers
// none of them and the routes behind them answer the viewer 403.
func TestBrowserWorkflowRunRepairs(t *testing.T) {
	h := browserHarness(t)
	admin := h.client()
	csrf := admin.login()
	runPage := brokenWorkflow(t, h, admin, csrf)
	if !strings.HasPrefix(runPage, "/workflow-runs/") {
		t.Fatalf("run now went to %q", runPage)
	}

	b := newBrowser(t, h, 1280, 900)
	b.login()
	b.do("accept confirms and open the run",
		chromedp.Navigate(h.url+runPage),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`)(ctx, tg)
			return err
		}))
	b.waitJS("the run to fail", `document.getElementById("wf-live").dataset.state === "failed"`)
	b.waitJSOr("the repair buttons", `document.getElementById("wf-live").outerHTML`, `!!document.getElementById("wf-retry") &&
		!!document.querySelector('#wf-nodes tr[data-node="bad"] .wf-node-retry') &&
		!!document.querySelector('#wf-nodes tr[data-node="bad"] .wf-node-mark') &&
		!document.querySelector('#wf-nodes tr[data-node="next"] .wf-node-retry')`)

	h.addUser("vera", "vera's long password", store.RoleViewer, "*")
	viewer := h.client()
	vcsrf := viewer.loginAs("vera", "vera's long password")
	p := viewer.get(runPage).mustStatus(t, http.StatusOK).mustContain(t, `id="wf-nodes"`)
	for _, action := range []string{`id="wf-retry"`, `wf-node-retry`, `wf-node-mark`} {
		if strings.Contains(p.body, action) {
			t.Errorf("the run page offers a viewer %s", action)
		}
	}
	for _, path := range []string{runPage + "/retry", runPage + "/nodes/bad/retry", runPage + "/nodes/bad/mark-succeeded"} {
		viewer.post(path, vcsrf, nil).mustStatus(t, http.StatusForbidden)
	}

	b.do("mark the failed node succeeded",
		chromedp.Click(chromedp.CSS(`#wf-nodes tr[data-node="bad"] .wf-node-mark`)))
	b.waitJS("the run to succeed", `document.getElementById("wf-live").dataset.state === "succeeded"`)
	b.waitJS("the buttons to go", `!document.getElementById("wf-retry") && !document.querySelector(".wf-node-mark")`)
	var runID int64
	fmt.Sscanf(runPage, "/workflow-runs/%d", &runID)
	if r, err := h.st.WorkflowRunGet(context.Background(), runID); err != nil || r.State != "succeeded" {
		t.Fatalf("after mark succeeded the run is %+v (%v)", r, err)
	}
}
