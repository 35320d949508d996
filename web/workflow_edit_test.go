package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/workflow"
)

// apiAdmin is a typed API client signed in as the harness's admin.
func apiAdmin(t *testing.T, h *harness) *api.Client {
	t.Helper()
	c, err := api.NewClient(h.url, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Login(context.Background(), adminName, adminPass); err != nil {
		t.Fatal(err)
	}
	return c
}

// fullWorkflow creates, through the API, workflow "etl" with every field of its graph set:
// job nodes with their timeout, retries (one of them 0) and backoff, a decision node, every
// edge condition, a run timeout, params over two lines. Its jobs are in app "ops".
func fullWorkflow(t *testing.T, h *harness, c *api.Client) (graph workflow.Graph, jobs []int64) {
	t.Helper()
	ctx := context.Background()
	for _, n := range []string{"extract-orders", "load-warehouse", "page-oncall"} {
		id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: n, Handler: "echo", App: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, id)
	}
	// A sub-workflow node names a stored workflow.
	sub, err := json.Marshal(workflow.Graph{Nodes: []workflow.Node{{Name: "copy", Kind: workflow.KindJob, JobID: jobs[1]}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateWorkflow(ctx, api.WorkflowRequest{Name: "archive", Graph: sub}); err != nil {
		t.Fatal(err)
	}
	three, zero := 3, 0
	graph = workflow.Graph{TimeoutMs: 3_600_000,
		Nodes: []workflow.Node{
			{Name: "extract", Kind: workflow.KindJob, JobID: jobs[0], OnFailure: workflow.Continue, TimeoutMs: 60_000, Retries: &three, RetryBackoffMs: 2_000},
			{Name: "check", Kind: workflow.KindDecision, Expr: `params.full == true && parents.extract.rows > 0`, OnFailure: workflow.FailWorkflow},
			{Name: "load", Kind: workflow.KindJob, JobID: jobs[1], OnFailure: workflow.Skip, TimeoutMs: 120_000, Retries: &zero, RetryBackoffMs: 500},
			{Name: "alert", Kind: workflow.KindJob, JobID: jobs[2], OnFailure: workflow.FailWorkflow},
			{Name: "archive", Kind: workflow.KindWorkflow, Workflow: "archive", OnFailure: workflow.Continue},
		},
		Edges: []workflow.Edge{
			{From: "extract", To: "check", When: workflow.OnSuccess},
			{From: "check", To: "load", When: workflow.IfTrue},
			{From: "check", To: "alert", When: workflow.IfFalse},
			{From: "extract", To: "alert", When: workflow.OnFailure},
			{From: "load", To: "alert", When: workflow.Always},
			{From: "load", To: "archive", When: workflow.OnSuccess},
		}}
	raw, err := json.Marshal(graph)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateWorkflow(ctx, api.WorkflowRequest{Name: "etl", Description: "Nightly orders load", Graph: raw,
		Params:          json.RawMessage("{\"full\": true,\n \"region\": \"eu\"}"),
		WorkflowOverlap: api.WorkflowOverlap{Concurrency: "at_most", MaxConcurrent: 2}}); err != nil {
		t.Fatal(err)
	}
	return graph, jobs
}

// editForm is the editor's form of fullWorkflow's workflow at version, as a browser sends it.
func editForm(jobs []int64, version int64, description string) url.Values {
	return url.Values{"name": {"etl"}, "version": {fmt.Sprint(version)}, "description": {description}, "params": {`{"full": true}`},
		"graph_timeout_ms": {"3600000"},
		"node_name":        {"extract", "load"}, "node_kind": {"job", "job"}, "node_job_id": {fmt.Sprint(jobs[0]), fmt.Sprint(jobs[1])},
		"node_expr": {"", ""}, "node_on_failure": {"fail", "fail"}, "node_timeout_ms": {"", ""}, "node_retries": {"5", ""},
		"node_retry_backoff_ms": {"", ""}, "edge_from": {"extract"}, "edge_to": {"load"}, "edge_when": {"on_success"}}
}

// Editing a stored workflow in the console is offered to, and allowed for, those whose
// scope covers its jobs' apps: a viewer and an operator of another app see no Edit, and the
// editor and the save refuse them (403) even when they forge the form; an admin's save is a
// compare-and-set on the form's version: after another save through the API it answers 409
// with the form as sent, and stores nothing.
func TestWorkflowEditScopeAndConflict(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			h := newHarness(t, dialect)
			ctx := context.Background()
			c := apiAdmin(t, h)
			_, jobs := fullWorkflow(t, h, c)
			before, err := c.GetWorkflow(ctx, "etl")
			if err != nil {
				t.Fatal(err)
			}
			h.addUser("vera", "vera's long password", store.RoleViewer, "*")
			h.addUser("otto", "otto's long password", store.RoleOperator, "billing")
			for _, who := range []string{"vera", "otto"} {
				u := h.client()
				csrf := u.loginAs(who, who+"'s long password")
				if p := u.get("/workflows/etl"); p.status == http.StatusOK && strings.Contains(p.body, `id="wf-edit"`) {
					t.Errorf("%s is offered Edit", who)
				}
				u.get("/workflows/etl/edit").mustStatus(t, http.StatusForbidden)
				u.post("/workflows/etl/edit", csrf, editForm(jobs, before.Version, "forged")).mustStatus(t, http.StatusForbidden)
			}
			if w, err := c.GetWorkflow(ctx, "etl"); err != nil || w.Version != before.Version || w.Description != before.Description {
				t.Fatalf("after the refused saves the workflow is %+v (%v)", w, err)
			}

			admin := h.client()
			csrf := admin.login()
			admin.get("/workflows/etl").mustStatus(t, http.StatusOK).mustContain(t, `id="wf-edit"`)
			admin.get("/workflows/etl/edit").mustStatus(t, http.StatusOK).
				mustContain(t, `name="version" value="1"`, `id="node-retries-0" name="node_retries" type="number" value="3"`)
			// Another edit through the API between the form's reading and its save.
			if _, err := c.UpdateWorkflow(ctx, "etl", api.WorkflowUpdate{Description: "changed by the API", Graph: before.Graph,
				Params: before.Params, Version: 1}); err != nil {
				t.Fatal(err)
			}
			admin.post("/workflows/etl/edit", csrf, editForm(jobs, 1, "my edit")).mustStatus(t, http.StatusConflict).
				mustContain(t, `id="wf-conflict"`, "another edit came first", `value="my edit"`, `value="5"`, `name="overwrite" value="2"`)
			if w, err := c.GetWorkflow(ctx, "etl"); err != nil || w.Version != 2 || w.Description != "changed by the API" {
				t.Fatalf("after the stale save the workflow is %+v (%v)", w, err)
			}
			// Saved over the version now stored, it is stored.
			form := editForm(jobs, 1, "my edit")
			form.Set("overwrite", "2")
			admin.post("/workflows/etl/edit", csrf, form).mustStatus(t, http.StatusSeeOther)
			w, err := c.GetWorkflow(ctx, "etl")
			if err != nil || w.Version != 3 || w.Description != "my edit" || !strings.Contains(string(w.Graph), `"retries":5`) {
				t.Fatalf("after the save over version 2 the workflow is %+v (%v)", w, err)
			}
		})
	}
}
