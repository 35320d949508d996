package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// A viewer sees the workflow pages without their actions, and the operations behind those
// actions refuse the viewer (403) whatever the page offered: run now, cancel, create. An
// admin's pages offer them, and the admin's cancel ends the run.
func TestWorkflowPagesViewerHasNoActions(t *testing.T) {
	h := newHarness(t, "sqlite")
	name, _ := etlWorkflow(t, h)
	admin := h.client()
	csrf := admin.login()
	admin.get("/workflows").mustStatus(t, http.StatusOK).mustContain(t, `id="new-workflow"`, `href="/workflows/etl"`)
	admin.get("/workflows/"+name).mustStatus(t, http.StatusOK).mustContain(t, `id="wf-run-open"`, `id="backfill-open"`, `class="wf-graph"`, "Nightly orders load")
	run := admin.post("/workflows/"+name+"/run", csrf, url.Values{"params": {`{"full": false}`}}).mustStatus(t, http.StatusSeeOther)
	var runID int64
	if _, err := fmt.Sscanf(run.header.Get("Location"), "/workflow-runs/%d", &runID); err != nil {
		t.Fatalf("run now went to %q", run.header.Get("Location"))
	}
	<-h.talking
	runPage := fmt.Sprintf("/workflow-runs/%d", runID)
	admin.get(runPage).mustStatus(t, http.StatusOK).mustContain(t, `id="wf-cancel"`, `hx-trigger="every 1s"`, "{&#34;full&#34;: false}")

	h.addUser("vera", "vera's long password", store.RoleViewer, "*")
	viewer := h.client()
	vcsrf := viewer.loginAs("vera", "vera's long password")
	pages := map[string]string{"/workflows": `href="/workflows/etl"`, "/workflows/" + name: `class="wf-graph"`, runPage: `id="wf-nodes"`}
	for path, shows := range pages {
		p := viewer.get(path).mustStatus(t, http.StatusOK).mustContain(t, shows)
		for _, action := range []string{`id="new-workflow"`, `id="wf-run-open"`, `id="wf-run-dialog"`, `id="wf-cancel"`, `id="backfill-open"`, `id="backfill-dialog"`} {
			if strings.Contains(p.body, action) {
				t.Errorf("%s offers a viewer %s", path, action)
			}
		}
	}
	viewer.get("/workflows/new").mustStatus(t, http.StatusForbidden)
	viewer.post("/workflows/"+name+"/run", vcsrf, nil).mustStatus(t, http.StatusForbidden)
	viewer.post(runPage+"/cancel", vcsrf, nil).mustStatus(t, http.StatusForbidden)
	viewer.post("/workflows/"+name+"/backfills", vcsrf, url.Values{"from": {"2026-03-01T00:00:00Z"}, "to": {"2026-03-02T00:00:00Z"}}).
		mustStatus(t, http.StatusForbidden)
	viewer.post("/workflows/new", vcsrf, url.Values{"name": {"sneaky"}, "node_name": {"a"}, "node_kind": {"decision"},
		"node_expr": {"true"}, "node_job_id": {""}, "node_on_failure": {"fail"}}).mustStatus(t, http.StatusForbidden)
	ctx := context.Background()
	if r, err := h.st.WorkflowRunGet(ctx, runID); err != nil || r.State != "running" {
		t.Fatalf("after the viewer's cancel the run is %+v (%v)", r, err)
	}
	if _, err := h.st.WorkflowGetByName(ctx, "sneaky"); err == nil {
		t.Fatal("the viewer's workflow was stored")
	}

	admin.post(runPage+"/cancel", csrf, nil).mustStatus(t, http.StatusSeeOther)
	if r, err := h.st.WorkflowRunGet(ctx, runID); err != nil || r.State != "canceled" || !strings.Contains(r.Message, "admin") {
		t.Fatalf("after the admin's cancel the run is %+v (%v)", r, err)
	}
	admin.get(runPage).mustContain(t, "canceled").mustStatus(t, http.StatusOK)
	if p := admin.get(runPage); strings.Contains(p.body, `id="wf-cancel"`) || strings.Contains(p.body, "hx-trigger") {
		t.Error("the canceled run's page still offers Cancel or polls")
	}
}

// Run now with params that are not JSON reopens the dialog with the error at the field; none
// is started.
func TestWorkflowRunNowBadParams(t *testing.T) {
	h := newHarness(t, "sqlite")
	name, _ := etlWorkflow(t, h)
	c := h.client()
	csrf := c.login()
	c.post("/workflows/"+name+"/run", csrf, url.Values{"params": {`{"full": tru`}}).mustStatus(t, http.StatusBadRequest).
		mustContain(t, `id="wf-run-dialog" aria-labelledby="wf-run-title" open`, "not JSON")
	c.post("/workflows/"+name+"/run", csrf, url.Values{"params": {`[1, 2]`}}).mustStatus(t, http.StatusBadRequest).
		mustContain(t, "params", "not a JSON object")
	if rs, err := h.st.WorkflowRunList(context.Background(), 0, 0, 10); err != nil || len(rs) != 0 {
		t.Fatalf("%d runs started (%v)", len(rs), err)
	}
}

// TestWorkflowPageShowsOverlap shows a workflow's overlap policy on its page, to a viewer
// too (it is read-only there), and allow for a workflow without one.
func TestWorkflowPageShowsOverlap(t *testing.T) {
	h := newHarness(t, "sqlite")
	name, _ := etlWorkflow(t, h)
	ctx := context.Background()
	w, err := h.st.WorkflowGetByName(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	admin := h.client()
	admin.login()
	admin.get("/workflows/"+name).mustStatus(t, http.StatusOK).mustContain(t, `id="wf-overlap"`, "<code>allow</code>")
	w.Concurrency, w.MaxConcurrent = "at_most", 2
	if err := h.st.WorkflowUpdate(ctx, w); err != nil {
		t.Fatal(err)
	}
	h.addUser("vera", "vera's long password", store.RoleViewer, "*")
	viewer := h.client()
	viewer.loginAs("vera", "vera's long password")
	viewer.get("/workflows/"+name).mustStatus(t, http.StatusOK).mustContain(t, `id="wf-overlap"`, "<code>at_most 2</code>")
}
