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

// In Chromium an operator runs a workflow whose node sub runs workflow inner: the run's page
// draws sub coloured by its state, linking to its child run, and the node table links there
// too; the child run's page links back to its parent run.
func TestBrowserSubWorkflowRun(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	job := func(name string) int64 {
		id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: name, Handler: "echo"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	x, a := job("inner-x"), job("outer-a")
	for _, w := range []*store.Workflow{
		{Name: "inner", Graph: fmt.Sprintf(`{"nodes":[{"name":"x","job_id":%d}]}`, x)},
		{Name: "outer", Graph: fmt.Sprintf(`{"nodes":[{"name":"a","job_id":%d},{"name":"sub","kind":"workflow","workflow":"inner"}],"edges":[{"from":"a","to":"sub"}]}`, a)},
	} {
		if err := h.st.WorkflowInsert(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, h, 1280, 900)
	b.login()
	b.do("run outer now",
		chromedp.Navigate(h.url+"/workflows/outer"),
		chromedp.WaitVisible(chromedp.CSS(`.wf-svg .wf-node[data-node="sub"]`)),
		chromedp.Click(chromedp.ID("wf-run-open")),
		chromedp.WaitVisible(chromedp.ID("wf-params")),
		chromedp.Click(chromedp.ID("wf-run-submit")),
		chromedp.WaitVisible(chromedp.ID("wf-live")))
	b.waitJSOr("the run to succeed with sub drawn succeeded", nodeClasses, `(() => {
		const n = document.querySelector('.wf-svg .wf-node[data-node="sub"]');
		return n && n.getAttribute("class").includes("kind-workflow") && n.getAttribute("class").includes("state-succeeded")
			&& document.getElementById("wf-live").dataset.state === "succeeded";
	})()`)
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[
		document.querySelector('.wf-svg .wf-node[data-node="sub"]').closest("a").getAttribute("href"),
		document.querySelector('#wf-nodes tr[data-node="sub"] a.wf-child-run').getAttribute("href"),
		].join("|")`))
	if err != nil {
		t.Fatal(err)
	}
	links := strings.Split(got, "|")
	if len(links) != 2 || !strings.HasPrefix(links[0], "/workflow-runs/") || links[0] != links[1] {
		t.Fatalf("sub's links (graph|table) = %q: want both to its child run", got)
	}
	parentURL, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`location.pathname`))
	if err != nil {
		t.Fatal(err)
	}
	shot(t, b, "workflow-run-subworkflow")
	b.do("follow the link to the child run",
		chromedp.Click(chromedp.CSS(`#wf-nodes tr[data-node="sub"] a.wf-child-run`)),
		chromedp.WaitVisible(chromedp.ID("wf-run-parent")))
	if back := b.text("#wf-run-parent"); !strings.Contains(back, "node sub") {
		t.Errorf("the child run's parent shows %q", back)
	}
	href, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("#wf-run-parent a").getAttribute("href")`))
	if err != nil || href != parentURL {
		t.Errorf("the child run links back to %q (%v), want the parent run %s", href, err, parentURL)
	}
	if state := b.text("#wf-run-state"); !strings.Contains(state, "succeeded") {
		t.Errorf("the child run's state shows %q", state)
	}
}
