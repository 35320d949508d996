package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
)

// TestWorkflowAPI creates a diamond workflow over the API, refuses bad graphs naming the
// field (a cycle with the cycle), runs it with params and reads the run: in-process handlers
// get the params and their parents' results (sundial.WorkflowFrom) and return results
// (sundial.SetResult). An operator of another app can neither see nor run it.
func TestWorkflowAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnvOn(t, openStore(t, dialect), nil, func(s *Server) {
			for _, name := range []string{"wa", "wb", "wc", "wd"} {
				s.Register(name, func(ctx context.Context) error {
					in := sundial.WorkflowFrom(ctx)
					if in == nil {
						return fmt.Errorf("no workflow input")
					}
					sum := in.Params["base"].(float64)
					for _, raw := range in.Parents {
						var v float64
						if err := json.Unmarshal(raw, &v); err != nil {
							return err
						}
						sum += v
					}
					return sundial.SetResult(ctx, sum)
				})
			}
		})
		ctx := context.Background()
		admin := e.client()
		ids := map[string]int64{}
		for _, n := range []string{"wa", "wb", "wc", "wd"} {
			ids[n] = must(admin.CreateJob(ctx, jobReq(n, "", n)))(t).ID
		}
		graph := fmt.Sprintf(`{"nodes":[{"name":"a","job_id":%d},{"name":"b","job_id":%d},{"name":"c","job_id":%d},{"name":"d","job_id":%d}],
			"edges":[{"from":"a","to":"b"},{"from":"a","to":"c"},{"from":"b","to":"d"},{"from":"c","to":"d"}]}`, ids["wa"], ids["wb"], ids["wc"], ids["wd"])

		for _, c := range []struct{ graph, field, msg string }{
			{`{"nodes":[{"name":"a","job_id":999999}]}`, "nodes[0].job_id", "does not exist"},
			{strings.Replace(graph, `"to":"d"}]`, `"to":"d"},{"from":"d","to":"a"}]`, 1), "edges", "cycle: a -> b -> d -> a"},
			{`{"nodes":[{"name":"x","kind":"decision","expr":"os.Exit(1)"}]}`, "nodes[0].expr", "expression"},
			{`{"nodes":[],"extra":1}`, "graph", "unknown field"},
		} {
			_, err := admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "bad", Graph: json.RawMessage(c.graph)})
			if ae := wantStatus(t, "bad graph", err, http.StatusBadRequest); ae.Field != c.field || !strings.Contains(ae.Message, c.msg) {
				t.Errorf("graph %s: %q on %q, want %q on %q", c.graph, ae.Message, ae.Field, c.msg, c.field)
			}
		}
		w := must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "sum", Graph: json.RawMessage(graph), Params: json.RawMessage(`{"base":1}`)}))(t)
		if _, err := admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "sum", Graph: json.RawMessage(graph)}); err == nil {
			t.Fatal("a second workflow named sum was stored")
		}
		run := must(admin.RunWorkflow(ctx, "sum", json.RawMessage(`{"base":2}`)))(t)
		if run.WorkflowID != w.ID || len(run.Nodes) != 1 || run.Nodes[0].Node != "a" {
			t.Fatalf("started run %+v: want the root a running", run)
		}
		eventually(t, "the run to end", func() bool {
			run = must(admin.GetWorkflowRun(ctx, run.ID))(t)
			return run.State != "running"
		})
		// a = 2, b = c = 2+2, d = 2+4+4.
		results := map[string]string{}
		for _, n := range run.Nodes {
			results[n.Node] = n.State + " " + string(n.Result)
			if n.ExecutionID == 0 {
				t.Errorf("node %s has no execution", n.Node)
			}
		}
		if run.State != "succeeded" || results["d"] != "succeeded 10" || results["b"] != "succeeded 4" {
			t.Fatalf("run %s %s, nodes %v: want d = 10", run.State, run.Message, results)
		}
		runs := must(admin.ListWorkflowRuns(ctx, "sum", api.ListOptions{}))(t)
		if len(runs.Items) != 1 || runs.Items[0].ID != run.ID {
			t.Fatalf("runs %+v", runs.Items)
		}
		if got := must(admin.CancelWorkflowRun(ctx, run.ID))(t); got.State != "succeeded" {
			t.Fatalf("canceling an ended run changed it to %s", got.State)
		}
		// The changes are in the audit log; the cancel that changed nothing is not.
		for action, want := range map[string]int{"workflow.create": 1, "workflow.run": 1, "workflow.cancel": 0} {
			if got := must(admin.ListAudit(ctx, api.AuditFilter{Action: action}))(t); len(got.Items) != want {
				t.Errorf("audit entries of %s: %d, want %d", action, len(got.Items), want)
			}
		}

		// A workflow is in the scope of its jobs' apps: an operator of beta sees the workflow of
		// in-process jobs (no app) but may not run it, and does not see one of alpha's jobs.
		alphaJob := must(admin.CreateJob(ctx, jobReq("remote", "alpha", "h")))(t)
		must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "alpha-only",
			Graph: json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"r","job_id":%d}]}`, alphaJob.ID))}))(t)
		op, _ := e.userClient(api.UserRequest{Name: "otto", Role: api.RoleOperator, Scope: []string{"beta"}})
		if page := must(op.ListWorkflows(ctx, api.ListOptions{}))(t); len(page.Items) != 1 || page.Items[0].Name != "sum" {
			t.Errorf("an operator of beta lists %+v, want sum alone", page.Items)
		}
		_, err := op.GetWorkflow(ctx, "alpha-only")
		wantStatus(t, "read another app's workflow", err, http.StatusForbidden)
		_, err = op.RunWorkflow(ctx, "sum", nil)
		wantStatus(t, "run a workflow of jobs of no app", err, http.StatusForbidden)
		_, err = op.CreateWorkflow(ctx, api.WorkflowRequest{Name: "mine", Graph: json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"r","job_id":%d}]}`, alphaJob.ID))})
		wantStatus(t, "create a workflow of another app's jobs", err, http.StatusForbidden)
		if page := must(admin.ListWorkflows(ctx, api.ListOptions{}))(t); len(page.Items) != 2 {
			t.Errorf("the admin lists %d workflows, want 2", len(page.Items))
		}
	})
}

// TestWorkflowRemoteDataPassing runs a workflow of two remote jobs on a real SDK executor:
// the second gets the run's params and the first's result in its run request
// (executor.Run.WorkflowInput), and its result (executor.SetResult) comes back with its
// outcome and is stored with its node.
func TestWorkflowRemoteDataPassing(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		ctx := context.Background()
		e.sdkExecutor("billing", "report", func(ctx context.Context) error {
			run, _ := executor.RunFrom(ctx)
			var in struct {
				Node    string                     `json:"node"`
				Params  map[string]float64         `json:"params"`
				Parents map[string]json.RawMessage `json:"parents"`
			}
			if err := json.Unmarshal([]byte(run.WorkflowInput), &in); err != nil {
				return fmt.Errorf("workflow input %q: %w", run.WorkflowInput, err)
			}
			n := in.Params["n"]
			if raw, ok := in.Parents["first"]; ok {
				var v float64
				if err := json.Unmarshal(raw, &v); err != nil {
					return err
				}
				n = v * 10
			}
			return executor.SetResult(ctx, n)
		})
		first := e.remoteJob("billing", "round_robin", nil)
		second := e.remoteJob("billing", "first", nil)
		admin := e.client()
		must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "remote", Graph: json.RawMessage(fmt.Sprintf(
			`{"nodes":[{"name":"first","job_id":%d},{"name":"second","job_id":%d}],"edges":[{"from":"first","to":"second"}]}`, first, second))}))(t)
		run := must(admin.RunWorkflow(ctx, "remote", json.RawMessage(`{"n":4}`)))(t)
		eventually(t, "the run to end", func() bool {
			run = must(admin.GetWorkflowRun(ctx, run.ID))(t)
			return run.State != "running"
		})
		got := map[string]string{}
		for _, n := range run.Nodes {
			got[n.Node] = n.State + " " + string(n.Result)
		}
		if run.State != "succeeded" || got["first"] != "succeeded 4" || got["second"] != "succeeded 40" {
			t.Fatalf("run %s (%s), nodes %q: want first 4 and second 40", run.State, run.Message, got)
		}
	})
}

// TestWorkflowOpsAPI repairs, edits and deletes workflows over the API: a viewer and an
// operator of another app get 403 on each op; an operator retries a failed node and the run
// from its failed nodes, marks a node succeeded with a result, updates the workflow (a run
// keeps the version it started with; a stale version is 409) and deletes it once no run is
// running (409 before; the cancel kills the running node's execution).
func TestWorkflowOpsAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		var mu sync.Mutex
		fail := true
		blockStarted := make(chan struct{}, 1)
		e := newEnvOn(t, openStore(t, dialect), nil, func(s *Server) {
			s.Register("wf_flaky", func(ctx context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				if fail {
					return fmt.Errorf("flaky failed")
				}
				return sundial.SetResult(ctx, "fixed")
			})
			s.Register("wf_next", func(ctx context.Context) error {
				return sundial.SetResult(ctx, sundial.WorkflowFrom(ctx).Parents["a"])
			})
			s.Register("wf_block", func(ctx context.Context) error {
				blockStarted <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			})
		})
		ctx := context.Background()
		admin := e.client()
		flaky := must(admin.CreateJob(ctx, jobReq("flaky", "", "wf_flaky")))(t).ID
		next := must(admin.CreateJob(ctx, jobReq("next", "", "wf_next")))(t).ID
		block := must(admin.CreateJob(ctx, jobReq("block", "", "wf_block")))(t).ID
		graph := fmt.Sprintf(`{"nodes":[{"name":"a","job_id":%d},{"name":"b","job_id":%d}],"edges":[{"from":"a","to":"b"}]}`, flaky, next)
		must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "ops", Graph: json.RawMessage(graph)}))(t)
		ended := func(id int64) *api.WorkflowRun {
			var run *api.WorkflowRun
			eventually(t, "the run to end", func() bool {
				run = must(admin.GetWorkflowRun(ctx, id))(t)
				return run.State != "running"
			})
			return run
		}
		states := func(run *api.WorkflowRun) string {
			var out []string
			for _, n := range run.Nodes {
				out = append(out, n.Node+"="+n.State+string(n.Result))
			}
			return run.State + " " + strings.Join(out, " ")
		}
		run := ended(must(admin.RunWorkflow(ctx, "ops", nil))(t).ID)
		if got := states(run); got != "failed a=failed b=canceled" {
			t.Fatalf("run: %s", got)
		}
		if run.Version != 1 {
			t.Errorf("run's workflow version %d, want 1", run.Version)
		}

		// Nobody but an operator in scope may touch it.
		viewer, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer})
		other, _ := e.userClient(api.UserRequest{Name: "otto", Role: api.RoleOperator, Scope: []string{"beta"}})
		for who, c := range map[string]*api.Client{"viewer": viewer, "beta's operator": other} {
			_, err := c.RetryWorkflowRun(ctx, run.ID)
			wantStatus(t, who+" retries a run", err, http.StatusForbidden)
			_, err = c.RetryWorkflowNode(ctx, run.ID, "a")
			wantStatus(t, who+" retries a node", err, http.StatusForbidden)
			_, err = c.MarkWorkflowNodeSucceeded(ctx, run.ID, "a", nil)
			wantStatus(t, who+" marks a node", err, http.StatusForbidden)
			_, err = c.CancelWorkflowRun(ctx, run.ID)
			wantStatus(t, who+" cancels a run", err, http.StatusForbidden)
			_, err = c.UpdateWorkflow(ctx, "ops", api.WorkflowUpdate{Graph: json.RawMessage(graph)})
			wantStatus(t, who+" updates a workflow", err, http.StatusForbidden)
			wantStatus(t, who+" deletes a workflow", c.DeleteWorkflow(ctx, "ops"), http.StatusForbidden)
		}
		if got := states(must(admin.GetWorkflowRun(ctx, run.ID))(t)); got != "failed a=failed b=canceled" {
			t.Fatalf("refused ops changed the run: %s", got)
		}

		// Retry the node, fixed: the run is reopened and b follows with a's result.
		mu.Lock()
		fail = false
		mu.Unlock()
		must(admin.RetryWorkflowNode(ctx, run.ID, "a"))(t)
		if got := states(ended(run.ID)); got != `succeeded a=succeeded"fixed" b=succeeded"fixed"` {
			t.Fatalf("after the node's retry: %s", got)
		}
		_, err := admin.RetryWorkflowRun(ctx, run.ID)
		wantStatus(t, "retry a succeeded run", err, http.StatusConflict)
		_, err = admin.RetryWorkflowNode(ctx, run.ID, "nosuch")
		wantStatus(t, "retry no node", err, http.StatusNotFound)

		// Retry from the failed nodes, and mark succeeded.
		mu.Lock()
		fail = true
		mu.Unlock()
		run = ended(must(admin.RunWorkflow(ctx, "ops", nil))(t).ID)
		must(admin.RetryWorkflowRun(ctx, run.ID))(t)
		if got := states(ended(run.ID)); got != "failed a=failed b=canceled" {
			t.Fatalf("retried while a still fails: %s", got)
		}
		must(admin.MarkWorkflowNodeSucceeded(ctx, run.ID, "a", json.RawMessage(`{"by":"hand"}`)))(t)
		if got := states(ended(run.ID)); got != `succeeded a=succeeded{"by":"hand"} b=succeeded{"by":"hand"}` {
			t.Fatalf("after marking a: %s", got)
		}
		_, err = admin.MarkWorkflowNodeSucceeded(ctx, run.ID, "a", nil)
		wantStatus(t, "mark a succeeded node", err, http.StatusConflict)

		// Update: a bad graph names its field; a stale version is refused; runs keep theirs.
		_, err = admin.UpdateWorkflow(ctx, "ops", api.WorkflowUpdate{Graph: json.RawMessage(`{"nodes":[{"name":"a","job_id":1,"retries":-1}]}`)})
		if ae := wantStatus(t, "bad graph", err, http.StatusBadRequest); ae.Field != "nodes[0].retries" {
			t.Errorf("bad graph's field %q", ae.Field)
		}
		blockGraph := fmt.Sprintf(`{"nodes":[{"name":"a","job_id":%d}]}`, block)
		w := must(admin.UpdateWorkflow(ctx, "ops", api.WorkflowUpdate{Graph: json.RawMessage(blockGraph), Version: 1}))(t)
		if w.Version != 2 {
			t.Errorf("updated version %d", w.Version)
		}
		_, err = admin.UpdateWorkflow(ctx, "ops", api.WorkflowUpdate{Graph: json.RawMessage(blockGraph), Version: 1})
		wantStatus(t, "stale update", err, http.StatusConflict)
		if got := must(admin.GetWorkflowRun(ctx, run.ID))(t); got.Version != 1 || len(got.Nodes) != 2 {
			t.Errorf("an earlier run %+v: want version 1 and its two nodes", got)
		}

		// Delete: refused while a run runs; the cancel kills its node.
		running := must(admin.RunWorkflow(ctx, "ops", nil))(t)
		<-blockStarted
		if running.Version != 2 {
			t.Errorf("new run's version %d, want 2", running.Version)
		}
		wantStatus(t, "delete with a running run", admin.DeleteWorkflow(ctx, "ops"), http.StatusConflict)
		must(admin.CancelWorkflowRun(ctx, running.ID))(t)
		var x *api.Execution
		eventually(t, "the node's execution to end", func() bool {
			r := must(admin.GetWorkflowRun(ctx, running.ID))(t)
			x = must(admin.GetExecution(ctx, r.Nodes[0].ExecutionID))(t)
			return x.State != "running"
		})
		if x.State != "canceled" {
			t.Errorf("the canceled run's node execution is %s, want killed (canceled)", x.State)
		}
		if err := admin.DeleteWorkflow(ctx, "ops"); err != nil {
			t.Fatal(err)
		}
		_, err = admin.GetWorkflow(ctx, "ops")
		wantStatus(t, "read a deleted workflow", err, http.StatusNotFound)
		if _, err := admin.GetWorkflowRun(ctx, running.ID); err != nil {
			t.Errorf("a deleted workflow's run is gone from history: %v", err)
		}
	})
}

// TestWorkflowOverlapAPI sets a workflow's overlap policy through the API: the job rule's
// check, with a 400 naming concurrency or max_concurrent, old names stored as the new, and
// a run started while another runs is queued (buffer_all) as the policy says.
func TestWorkflowOverlapAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		release := make(chan struct{})
		e := newEnvOn(t, openStore(t, dialect), nil, func(s *Server) {
			s.Register("held", func(ctx context.Context) error {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			})
		})
		t.Cleanup(func() { close(release) })
		ctx := context.Background()
		admin := e.client()
		job := must(admin.CreateJob(ctx, jobReq("wo", "", "held")))(t)
		graph := json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"a","job_id":%d}]}`, job.ID))
		for _, c := range []struct {
			ov    api.WorkflowOverlap
			field string
		}{
			{api.WorkflowOverlap{Concurrency: "sometimes"}, "concurrency"},
			{api.WorkflowOverlap{Concurrency: "at_most"}, "max_concurrent"},
			{api.WorkflowOverlap{Concurrency: "at_most", MaxConcurrent: 1001}, "max_concurrent"},
			{api.WorkflowOverlap{Concurrency: "skip", MaxConcurrent: 2}, "max_concurrent"},
		} {
			_, err := admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "bad", Graph: graph, WorkflowOverlap: c.ov})
			if ae := wantStatus(t, "bad overlap", err, http.StatusBadRequest); ae.Field != c.field {
				t.Errorf("%+v: 400 on %q (%s), want on %q", c.ov, ae.Field, ae.Message, c.field)
			}
		}
		w := must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "serial", Graph: graph, WorkflowOverlap: api.WorkflowOverlap{Concurrency: "serial"}}))(t)
		if w.Concurrency != "buffer_all" {
			t.Errorf("stored concurrency %q, want serial stored as buffer_all", w.Concurrency)
		}
		// The first run's node is held: the second run waits behind it.
		first := must(admin.RunWorkflow(ctx, "serial", nil))(t)
		second := must(admin.RunWorkflow(ctx, "serial", nil))(t)
		if first.State != "running" || second.State != "queued" || len(second.Nodes) != 0 {
			t.Errorf("runs %s and %s (%d nodes), want running then queued without nodes", first.State, second.State, len(second.Nodes))
		}
		// A queued run keeps its workflow from being deleted, as a running one does. (Asked
		// before the update below: at_most 3 lets the queued run start.)
		err := admin.DeleteWorkflow(ctx, "serial")
		if ae := wantStatus(t, "delete with live runs", err, http.StatusConflict); !strings.Contains(ae.Message, "1 queued") {
			t.Errorf("409 %q, want the queued run counted", ae.Message)
		}
		must(admin.UpdateWorkflow(ctx, "serial", api.WorkflowUpdate{Graph: graph, WorkflowOverlap: api.WorkflowOverlap{Concurrency: "at_most", MaxConcurrent: 3}}))(t)
		if got := must(admin.GetWorkflow(ctx, "serial"))(t); got.Concurrency != "at_most" || got.MaxConcurrent != 3 {
			t.Errorf("after the update: %q %d, want at_most 3", got.Concurrency, got.MaxConcurrent)
		}
		_, err = admin.UpdateWorkflow(ctx, "serial", api.WorkflowUpdate{Graph: graph, WorkflowOverlap: api.WorkflowOverlap{Concurrency: "at_most"}})
		if ae := wantStatus(t, "update without a limit", err, http.StatusBadRequest); ae.Field != "max_concurrent" {
			t.Errorf("400 on %q, want max_concurrent", ae.Field)
		}
	})
}
