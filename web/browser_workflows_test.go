package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// etlWorkflow stores the workflow the browser tests draw: extract (the harness's talker, which
// runs until released) -> check (a decision on params.full) -> load when true, skip_load
// when false; alert runs on extract's failure. load returns a result.
func etlWorkflow(t *testing.T, h *harness) (name string, extract int64) {
	t.Helper()
	ctx := context.Background()
	h.srv.Register("loader", func(ctx context.Context) error { return sundial.SetResult(ctx, map[string]int{"rows": 42}) })
	job := func(name, handler string) int64 {
		id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: name, Handler: handler})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	extract = job("extract-orders", "talker")
	load, skip, alert := job("load-warehouse", "loader"), job("note-skip", "echo"), job("page-oncall", "echo")
	graph := fmt.Sprintf(`{"nodes":[{"name":"extract","job_id":%d},{"name":"check","kind":"decision","expr":"params.full == true"},
		{"name":"load","job_id":%d},{"name":"skip_load","job_id":%d},{"name":"alert","job_id":%d}],
		"edges":[{"from":"extract","to":"check"},{"from":"check","to":"load","when":"true"},{"from":"check","to":"skip_load","when":"false"},
		{"from":"extract","to":"alert","when":"on_failure"}]}`, extract, load, skip, alert)
	if err := h.st.WorkflowInsert(ctx, &store.Workflow{Name: "etl", Description: "Nightly orders load", Graph: graph, Params: `{"full":true}`}); err != nil {
		t.Fatal(err)
	}
	return "etl", extract
}

// nodeClasses is the JavaScript that maps each drawn node to its class attribute.
const nodeClasses = `JSON.stringify(Object.fromEntries([...document.querySelectorAll(".wf-svg .wf-node")].map(n => [n.dataset.node, n.getAttribute("class")])))`

// In Chromium an operator opens the workflow list and a workflow: its graph is drawn with a
// shape per node kind and a stroke per edge condition, job nodes linking to their jobs. Run
// now starts a run whose page colours each node by its state and follows it live: the
// running extract turns succeeded once released, the decision's true branch runs and its
// result shows, the false branch and the failure branch are skipped.
func TestBrowserWorkflowGraphAndLiveRun(t *testing.T) {
	h := browserHarness(t)
	name, extract := etlWorkflow(t, h)
	b := newBrowser(t, h, 1280, 900)
	b.login()
	b.do("open the workflow list",
		chromedp.Navigate(h.url+"/workflows"),
		chromedp.WaitVisible(chromedp.CSS(`#workflow-table a[href="/workflows/etl"]`)),
		chromedp.Click(chromedp.CSS(`#workflow-table a[href="/workflows/etl"]`)),
		chromedp.WaitVisible(chromedp.CSS(".wf-svg")))
	b.waitJSOr("5 nodes and 4 edges drawn", nodeClasses,
		`document.querySelectorAll(".wf-svg .wf-node").length === 5 && document.querySelectorAll(".wf-svg .wf-edge").length === 4`)
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[
		document.querySelector('.wf-node[data-node="check"]').getAttribute("class"),
		document.querySelector('.wf-node[data-node="check"] polygon') ? "polygon" : "none",
		document.querySelector('.wf-node[data-node="extract"] rect') ? "rect" : "none",
		document.querySelector('.wf-node[data-node="extract"]').closest("a").getAttribute("href"),
		document.querySelector('.wf-edge-g[data-from="extract"][data-to="alert"] path').getAttribute("class"),
		document.querySelector('.wf-edge-g[data-from="check"][data-to="load"] path').getAttribute("class"),
		getComputedStyle(document.querySelector('.wf-edge-g[data-from="extract"][data-to="alert"] path')).strokeDasharray,
		getComputedStyle(document.querySelector('.wf-edge-g[data-from="extract"][data-to="check"] path')).strokeDasharray,
		].join("|")`))
	want := fmt.Sprintf("wf-node kind-decision|polygon|rect|/jobs/%d|wf-edge on_failure|wf-edge true|6px, 4px|none", extract)
	if err != nil || got != want {
		t.Fatalf("the drawn graph:\n got %s (%v)\nwant %s", got, err, want)
	}
	shot(t, b, "workflow-detail-light")

	b.do("run it now",
		chromedp.Click(chromedp.ID("wf-run-open")),
		chromedp.WaitVisible(chromedp.ID("wf-params")),
		fill("wf-params", `{"full": true}`),
		chromedp.Click(chromedp.ID("wf-run-submit")),
		chromedp.WaitVisible(chromedp.ID("wf-live")))
	<-h.talking
	b.waitJSOr("extract drawn running, the rest pending", nodeClasses, `(() => {
		const c = n => (document.querySelector('.wf-svg .wf-node[data-node="' + n + '"]') || {}).getAttribute?.("class") || "";
		return c("extract").includes("state-running") && c("load").includes("state-pending") && c("check").includes("state-pending");
	})()`)
	if live := b.text("#wf-run-state"); !strings.Contains(live, "running") {
		t.Fatalf("the run's state shown: %q", live)
	}
	b.screenshot("workflow-run-running")
	// The page was loaded before extract ended: what follows arrives by its polling.
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[chromedp.Void](`window.__samePage = true`)); err != nil {
		t.Fatal(err)
	}
	h.release <- struct{}{}
	b.waitJSOr("the run followed to its end", nodeClasses, `(() => {
		const c = n => (document.querySelector('.wf-svg .wf-node[data-node="' + n + '"]') || {}).getAttribute?.("class") || "";
		return c("extract").includes("state-succeeded") && c("check").includes("state-true") && c("load").includes("state-succeeded")
			&& c("skip_load").includes("state-skipped") && c("alert").includes("state-skipped")
			&& document.getElementById("wf-live").dataset.state === "succeeded";
	})()`)
	same, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.__samePage === true`))
	if err != nil || !same {
		t.Fatalf("the page reloaded instead of updating in place (%v)", err)
	}
	row := b.text(`#wf-nodes tr[data-node="load"]`)
	if !strings.Contains(row, `"rows":42`) || !strings.Contains(row, "#") {
		t.Fatalf("load's row shows no result or execution: %q", row)
	}
	href, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('.wf-node[data-node="load"]').closest("a").getAttribute("href")`))
	if err != nil || !strings.HasPrefix(href, "/executions/") {
		t.Fatalf("load links to %q (%v), want its execution", href, err)
	}
	// Ended: the page stops asking.
	if polling, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.getElementById("wf-live").hasAttribute("hx-trigger") || !!document.getElementById("wf-cancel")`)); err != nil || polling {
		t.Fatalf("the ended run's page still polls or offers Cancel (%v)", err)
	}
	shot(t, b, "workflow-run-light")
	b.preferDark()
	shot(t, b, "workflow-run-dark")
	phone := newBrowser(t, h, 390, 844)
	phone.login()
	fits := func(page string) {
		t.Helper()
		width, err := chromedp.Run(phone.ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil || width > 390 {
			t.Fatalf("on a phone %s is %d px wide (%v)", page, width, err)
		}
	}
	phone.do("open the workflow on a phone", chromedp.Navigate(h.url+"/workflows/"+name), chromedp.WaitVisible(chromedp.CSS(".wf-svg")))
	fits("the workflow")
	shot(t, phone, "workflow-detail-phone")
	phone.do("open the run on a phone", chromedp.Click(chromedp.CSS(`#wf-runs a`)))
	phone.waitJS("the run's page", `location.pathname.startsWith("/workflow-runs/") && document.querySelector(".wf-svg .state-succeeded") !== null`)
	fits("the run")
	shot(t, phone, "workflow-run-phone")
	phone.do("open the editor on a phone", chromedp.Navigate(h.url+"/workflows/new"), chromedp.WaitVisible(chromedp.ID("node-name-0")))
	fits("the editor")
	shot(t, phone, "workflow-editor-phone")
	phone.preferDark()
	phone.do("open the workflow in dark mode", chromedp.Navigate(h.url+"/workflows/"+name), chromedp.WaitVisible(chromedp.CSS(".wf-svg")))
	shot(t, phone, "workflow-detail-phone-dark")
}

// shot saves a screenshot, and a copy in SUNDIAL_SHOTS when set (for a person to look at).
func shot(t *testing.T, b *browser, name string) {
	t.Helper()
	path := b.screenshot(name)
	if dir := os.Getenv("SUNDIAL_SHOTS"); dir != "" {
		data, err := os.ReadFile(path)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".png"), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// setSelect picks a select's option by value as a person would (the change event fires).
func setSelect(id, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.getElementById(%q); s.value = %q;
		s.dispatchEvent(new Event("change", {bubbles: true})); })()`, id, value))
}

// In Chromium an operator builds a workflow in the editor: the preview draws the nodes and
// edges as they are typed; a node named twice is refused with the error at that node's name
// (from the workflow's own validation), nothing stored; fixed, it is created and shown.
func TestBrowserWorkflowEditor(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	var ids []int64
	for _, n := range []string{"extract-orders", "load-warehouse"} {
		id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: n, Handler: "echo"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	b.do("open the editor and name the first node",
		chromedp.Navigate(h.url+"/workflows"),
		chromedp.Click(chromedp.ID("new-workflow")),
		chromedp.WaitVisible(chromedp.ID("node-name-0")),
		fill("name", "orders"),
		fill("node-name-0", "extract"),
		pickJob(0, "extract", ids[0]),
		chromedp.Click(chromedp.ID("add-node")),
		chromedp.WaitVisible(chromedp.ID("node-name-1")),
		fill("node-name-1", "extract"),
		pickJob(1, "load-w", ids[1]))
	b.waitJSOr("the preview to draw the first node and name the duplicate", `document.getElementById("wf-preview").innerText`,
		`document.querySelectorAll("#wf-preview .wf-node").length === 1 && /named twice/.test(document.getElementById("wf-preview").innerText)`)
	b.do("submit it as it is", chromedp.Click(chromedp.ID("wf-save")), chromedp.WaitVisible(chromedp.ID("err-node-name-1")))
	b.waitJS("the error at the second node's name", `/node "extract" is named twice/.test(document.getElementById("err-node-name-1").textContent)
		&& document.getElementById("node-name-1").getAttribute("aria-invalid") === "true" && document.getElementById("err-node-name-0").textContent === ""`)
	if ws, err := h.st.WorkflowList(ctx, 0, 10); err != nil || len(ws) != 0 {
		t.Fatalf("the refused workflow was stored: %d (%v)", len(ws), err)
	}
	shot(t, b, "workflow-editor-error")
	b.do("fix the name and join the nodes",
		fill("node-name-1", "load"),
		fill("edge-from-0", "extract"),
		fill("edge-to-0", "load"),
		setSelect("edge-when-0", "always"))
	b.waitJSOr("the preview to draw both nodes and the always edge", `document.getElementById("wf-preview").innerHTML`,
		`document.querySelectorAll("#wf-preview .wf-node").length === 2 && document.querySelector('#wf-preview .wf-edge.always') !== null
		&& !document.getElementById("wf-preview-error")`)
	shot(t, b, "workflow-editor-preview")
	// The preview draws the same graph, so the created workflow is known by its page, not its drawing.
	b.do("create it", chromedp.Click(chromedp.ID("wf-save")))
	b.waitJS("the created workflow's page", `location.pathname === "/workflows/orders" && /done=wf-created/.test(location.search)
		&& document.querySelector(".wf-svg .wf-edge.always") !== null`)
	w, err := h.st.WorkflowGetByName(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"nodes":[{"name":"extract","kind":"job","job_id":%d,"on_failure":"fail"},{"name":"load","kind":"job","job_id":%d,"on_failure":"fail"}],"edges":[{"from":"extract","to":"load","when":"always"}]}`, ids[0], ids[1])
	if w.Graph != want {
		t.Fatalf("stored graph\n got %s\nwant %s", w.Graph, want)
	}
}

// In Chromium an operator backfills a workflow from its page: a dry run lists the runs in the
// dialog and stores nothing; started, the backfill is listed on the page, and its workflow
// runs, marked backfill, show their data intervals.
func TestBrowserWorkflowBackfill(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	load, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "load", Handler: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.WorkflowInsert(ctx, &store.Workflow{Name: "nightly", Graph: fmt.Sprintf(`{"nodes":[{"name":"load","job_id":%d}]}`, load)}); err != nil {
		t.Fatal(err)
	}
	cron, err := sundial.Cron("0 0 2 * * ?", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "nightly-trigger", Handler: "sundial.workflow", Params: "nightly"},
		sundial.Trigger{Schedule: cron}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 900)
	b.login()
	b.do("dry-run two nights",
		chromedp.Navigate(h.url+"/workflows/nightly"),
		chromedp.WaitVisible(chromedp.CSS("#wf-triggers")),
		chromedp.Click(chromedp.ID("backfill-open")),
		chromedp.WaitVisible(chromedp.ID("backfill-from")),
		fill("backfill-from", "2026-03-01T00:00:00Z"),
		fill("backfill-to", "2026-03-02T23:00:00Z"),
		chromedp.Click(chromedp.ID("backfill-dry-run")),
		chromedp.WaitVisible(chromedp.ID("backfill-plan")))
	if plan := b.text("#backfill-plan"); !strings.Contains(plan, "Dry run: 2 scheduled time(s) in 2 run(s); nothing stored.") {
		t.Fatalf("the plan shown:\n%s", plan)
	}
	if rs, err := h.st.WorkflowRunList(ctx, 0, 0, 10); err != nil || len(rs) != 0 {
		t.Fatalf("the dry run started %d runs (%v)", len(rs), err)
	}
	b.do("start it", chromedp.Click(chromedp.ID("backfill-submit")), chromedp.WaitVisible(chromedp.ID("backfills")))
	for range 2 {
		<-h.ran
	}
	b.do("open a run", chromedp.Navigate(h.url+"/workflows/nightly"), chromedp.WaitVisible(chromedp.CSS("#wf-runs")))
	b.waitJSOr("two backfill runs listed", `document.getElementById("wf-runs").innerText`,
		`(document.getElementById("wf-runs").innerText.match(/backfill/g) || []).length === 2`)
	b.do("open a run", chromedp.Click(chromedp.CSS("#wf-runs a")), chromedp.WaitVisible(chromedp.ID("wf-run-interval")))
	iv, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](
		`[...document.querySelectorAll("#wf-run-interval time")].map(t => t.getAttribute("datetime")).join(" ")`))
	if want := "2026-03-01T02:00:00Z 2026-03-02T02:00:00Z"; err != nil || iv != want {
		t.Fatalf("the newest run's interval %q (%v), want %q", iv, err, want)
	}
	if bf := b.text("#wf-run-backfill"); !strings.Contains(bf, "backfill") {
		t.Fatalf("the run's backfill: %q", bf)
	}
	shot(t, b, "workflow-backfill-run")
}
