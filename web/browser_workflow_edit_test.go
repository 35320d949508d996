package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
)

// pickJob picks job id for node row i by typing search into its job picker and clicking the
// job among those listed.
func pickJob(i int, search string, id int64) chromedp.Action[chromedp.Void] {
	input := fmt.Sprintf("node-job-id-%d", i)
	opt := fmt.Sprintf(`#list-%s .wf-pick-opt[data-job="%d"]`, input, id)
	return chromedp.Steps(fill(input, search), chromedp.WaitVisible(chromedp.CSS(opt)), chromedp.Click(chromedp.CSS(opt)),
		chromedp.WaitNotPresent(chromedp.CSS(opt)))
}

// value is the JavaScript that reads an input's value by id.
func value(id string) string { return fmt.Sprintf(`document.getElementById(%q).value`, id) }

// In Chromium an admin edits a stored workflow: the editor opens with every setting of its
// nodes, edges and graph in the form; the job picker lists at most 20 jobs and finds one
// among many by a part of its name; a node added, another's retries changed and saved, the
// API shows both and the version went up by one.
func TestBrowserWorkflowEdit(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	c := apiAdmin(t, h)
	_, jobs := fullWorkflow(t, h, c)
	for i := range 30 {
		if _, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: fmt.Sprintf("filler-%02d", i), Handler: "echo", App: "ops"}); err != nil {
			t.Fatal(err)
		}
	}
	audit, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "audit-ledger", Handler: "echo", App: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	b.do("open the editor from the workflow's page",
		chromedp.Navigate(h.url+"/workflows/etl"),
		chromedp.Click(chromedp.ID("wf-edit")),
		chromedp.WaitVisible(chromedp.ID("node-name-0")))
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[`+strings.Join([]string{value("graph-timeout-ms"), value("node-retries-0"),
		value("node-timeout-ms-0"), value("node-retry-backoff-ms-0"), value("node-on-failure-0"), value("node-job-id-0"),
		value("node-kind-1"), value("node-expr-1"), `String(document.getElementById("node-expr-1").closest(".wf-cell").hidden)`,
		`String(document.getElementById("node-retries-1").closest(".wf-cell").hidden)`, value("node-retries-2"),
		value("edge-when-2"), `document.querySelector('input[name="version"]').value`}, ",")+`].join("|")`))
	want := "3600000|3|60000|2000|continue|extract-orders|decision|params.full == true && parents.extract.rows > 0|false|true|0|false|1"
	if err != nil || got != want {
		t.Fatalf("the editor's form:\n got %s (%v)\nwant %s", got, err, want)
	}
	shot(t, b, "workflow-edit-light")

	b.do("add a node and list the jobs",
		chromedp.Click(chromedp.ID("add-node")),
		chromedp.WaitVisible(chromedp.ID("node-name-5")),
		fill("node-name-5", "audit"),
		chromedp.Click(chromedp.ID("node-job-id-5")),
		chromedp.WaitVisible(chromedp.CSS("#list-node-job-id-5 .wf-pick-opt")))
	if n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#list-node-job-id-5 .wf-pick-opt").length`)); err != nil || n != 20 {
		t.Fatalf("the picker lists %d jobs (%v), want the first 20", n, err)
	}
	b.do("find the job by search", fill("node-job-id-5", "dit-led"))
	b.waitJSOr("only audit-ledger listed", `document.getElementById("list-node-job-id-5").innerText`,
		fmt.Sprintf(`(() => { const o = [...document.querySelectorAll("#list-node-job-id-5 .wf-pick-opt")];
			return o.length === 1 && o[0].dataset.job === "%d"; })()`, audit))
	shot(t, b, "workflow-edit-picker")
	b.do("pick it, join it and change extract's retries",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#list-node-job-id-5 .wf-pick-opt[data-job="%d"]`, audit))),
		chromedp.Click(chromedp.ID("add-edge")),
		chromedp.WaitVisible(chromedp.ID("edge-from-6")),
		fill("edge-from-6", "load"),
		fill("edge-to-6", "audit"),
		fill("node-retries-0", "7"))
	b.waitJSOr("the preview to draw the new node from its job", `document.getElementById("wf-preview").innerText`,
		`document.querySelectorAll("#wf-preview .wf-node").length === 6 && !document.getElementById("wf-preview-error")
		&& /audit-ledger/.test(document.querySelector('#wf-preview .wf-node[data-node="audit"]')?.textContent || "")`)
	b.do("save", chromedp.Click(chromedp.ID("wf-save")), chromedp.WaitVisible(chromedp.ID("wf-edit")))
	if flash := b.text(".alert.ok"); !strings.Contains(flash, "version 2") {
		t.Errorf("the flash after saving: %q", flash)
	}
	w, err := c.GetWorkflow(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Nodes []struct {
			Name    string `json:"name"`
			JobID   int64  `json:"job_id"`
			Retries *int   `json:"retries"`
		} `json:"nodes"`
		Edges []struct{ From, To string } `json:"edges"`
	}
	if err := json.Unmarshal(w.Graph, &g); err != nil {
		t.Fatal(err)
	}
	if w.Version != 2 || len(g.Nodes) != 6 || g.Nodes[0].Retries == nil || *g.Nodes[0].Retries != 7 || g.Nodes[5].Name != "audit" ||
		g.Nodes[5].JobID != audit || len(g.Edges) != 7 || g.Edges[6].From != "load" || g.Edges[6].To != "audit" {
		t.Fatalf("the saved workflow: version %d graph %s", w.Version, w.Graph)
	}
	_ = jobs
}

// A workflow created through the API with every field set, opened in the console's editor
// and saved unchanged, is stored byte for byte as it was (graph, params, description), at
// the next version.
func TestBrowserWorkflowEditRoundTrip(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	c := apiAdmin(t, h)
	fullWorkflow(t, h, c)
	before, err := c.GetWorkflow(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := h.st.WorkflowGetByName(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	b.do("open the editor and save",
		chromedp.Navigate(h.url+"/workflows/etl/edit"),
		chromedp.WaitVisible(chromedp.ID("node-name-0")),
		chromedp.Click(chromedp.ID("wf-save")),
		chromedp.WaitVisible(chromedp.ID("wf-edit")))
	after, err := c.GetWorkflow(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version+1 {
		t.Errorf("version %d after the save, want %d", after.Version, before.Version+1)
	}
	if after.WorkflowOverlap != before.WorkflowOverlap || before.Concurrency != "at_most" {
		t.Errorf("overlap policy %+v after the save, want %+v (at_most)", after.WorkflowOverlap, before.WorkflowOverlap)
	}
	if string(after.Graph) != string(before.Graph) || string(after.Params) != string(before.Params) || after.Description != before.Description {
		t.Fatalf("the API's workflow changed:\nbefore %s %s %q\n after %s %s %q", before.Graph, before.Params, before.Description,
			after.Graph, after.Params, after.Description)
	}
	now, err := h.st.WorkflowGetByName(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	if now.Graph != stored.Graph || now.Params != stored.Params || now.Description != stored.Description {
		t.Fatalf("the stored workflow changed:\nbefore %s %q\n after %s %q", stored.Graph, stored.Params, now.Graph, now.Params)
	}
}

// In Chromium, when another save (through the API) comes between opening the editor and
// saving it, the save shows the conflict and keeps everything typed; saving over the newer
// version then stores it.
func TestBrowserWorkflowEditConflict(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	c := apiAdmin(t, h)
	fullWorkflow(t, h, c)
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	b.do("open the editor and change two settings",
		chromedp.Navigate(h.url+"/workflows/etl/edit"),
		chromedp.WaitVisible(chromedp.ID("node-name-0")),
		fill("description", "my description"),
		fill("node-retries-2", "9"))
	w, err := c.GetWorkflow(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateWorkflow(ctx, "etl", api.WorkflowUpdate{Description: "theirs", Graph: w.Graph, Params: w.Params, Version: w.Version}); err != nil {
		t.Fatal(err)
	}
	b.expectError("409")
	b.do("save", chromedp.Click(chromedp.ID("wf-save")), chromedp.WaitVisible(chromedp.ID("wf-conflict")))
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[`+strings.Join([]string{value("description"), value("node-retries-2"),
		value("node-name-3"), `document.getElementById("wf-conflict").innerText`}, ",")+`].join("|")`))
	if err != nil || !strings.HasPrefix(got, "my description|9|alert|") || !strings.Contains(got, "another edit came first") || !strings.Contains(got, "Save over version 2") {
		t.Fatalf("the form after the conflict: %q (%v)", got, err)
	}
	if w, err := c.GetWorkflow(ctx, "etl"); err != nil || w.Version != 2 || w.Description != "theirs" {
		t.Fatalf("the conflicting save stored %+v (%v)", w, err)
	}
	shot(t, b, "workflow-edit-conflict")
	b.preferDark()
	shot(t, b, "workflow-edit-conflict-dark")
	b.do("save over version 2", chromedp.Click(chromedp.ID("wf-overwrite")), chromedp.WaitVisible(chromedp.ID("wf-edit")))
	if w, err := c.GetWorkflow(ctx, "etl"); err != nil || w.Version != 3 || w.Description != "my description" || !strings.Contains(string(w.Graph), `"retries":9`) {
		t.Fatalf("after saving over version 2: %+v (%v)", w, err)
	}
	phone := newBrowser(t, h, 390, 844)
	phone.login()
	phone.do("open the editor on a phone", chromedp.Navigate(h.url+"/workflows/etl/edit"), chromedp.WaitVisible(chromedp.ID("node-name-0")),
		chromedp.Click(chromedp.ID("node-job-id-0")), chromedp.WaitVisible(chromedp.CSS("#list-node-job-id-0 .wf-pick-opt")))
	if width, err := chromedp.Run(phone.ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || width > 390 {
		t.Fatalf("on a phone the editor is %d px wide (%v)", width, err)
	}
	shot(t, phone, "workflow-edit-phone")
}
