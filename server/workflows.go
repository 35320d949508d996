package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/store"
)

// WorkflowHandler is the handler of a workflow's trigger jobs (engine.WorkflowHandler): a job
// with it whose params are a workflow's name starts a run of that workflow at each fire.
const WorkflowHandler = engine.WorkflowHandler

// WorkflowRef names a workflow.
type WorkflowRef struct {
	Name string `json:"name"`
}

// WorkflowQuery is a page of workflows by id, after After.
type WorkflowQuery struct {
	After int64 `json:"after"`
	Limit int   `json:"limit"`
}

// WorkflowRunStart runs workflow Name now.
type WorkflowRunStart struct {
	Name string `json:"name"`
	api.WorkflowRunRequest
}

// WorkflowRunQuery is a page of a workflow's runs, newest first, below Before.
type WorkflowRunQuery struct {
	Name   string `json:"name"`
	Before int64  `json:"after"`
	Limit  int    `json:"limit"`
}

// WorkflowRunRef names a workflow run.
type WorkflowRunRef struct {
	ID int64 `json:"id"`
}

// WorkflowChange replaces workflow Name's description, graph and params.
type WorkflowChange struct {
	Name string `json:"name"`
	api.WorkflowUpdate
}

// WorkflowNodeRef names a node of a workflow run.
type WorkflowNodeRef struct {
	ID   int64  `json:"id"`
	Node string `json:"node"`
}

// WorkflowNodeMark marks a node of a run succeeded with a result.
type WorkflowNodeMark struct {
	WorkflowNodeRef
	api.WorkflowNodeMark
}

// WorkflowRunOut is a run with its nodes (nil in lists).
type WorkflowRunOut struct {
	Run   *store.WorkflowRun
	Nodes []*store.WorkflowNode
	// Workflow is the run's workflow when read alone (GetWorkflowRun), nil once deleted.
	Workflow *store.Workflow
	// Parent is the sub-workflow node this run runs for, nil for a run of its own (or once
	// that node was retried).
	Parent *store.WorkflowNode
}

// WorkflowPage and WorkflowRunPage are pages; More says another follows the last.
type WorkflowPage struct {
	Workflows []*store.Workflow
	More      bool
}

type WorkflowRunPage struct {
	Runs []*store.WorkflowRun
	More bool
}

// graphTarget is the apps of a workflow's jobs: a person acts on a workflow when each of
// them is in their scope.
func (s *Server) graphTarget(ctx context.Context, graph string) (target, error) {
	g, err := engine.ParseGraph(graph)
	if err != nil {
		return target{}, err
	}
	apps, err := engine.WorkflowApps(ctx, s.store, g)
	if err != nil {
		return target{}, err
	}
	return target{apps: apps}, nil
}

// checkSubWorkflows refuses a graph, to be stored as workflow name, whose sub-workflow nodes
// name a missing workflow or recur (engine.CheckSubWorkflows), in the writer's transaction.
func checkSubWorkflows(ctx context.Context, q store.Querier, name, graph string) error {
	g, err := engine.ParseGraph(graph)
	if err != nil {
		return err
	}
	return engine.CheckSubWorkflows(ctx, q, name, g)
}

func (s *Server) byWorkflow(ctx context.Context, name string) (target, error) {
	w, err := s.store.WorkflowGetByName(ctx, name)
	if err != nil {
		return target{}, err
	}
	return s.graphTarget(ctx, w.Graph)
}

func (s *Server) byWorkflowRun(ctx context.Context, id int64) (target, error) {
	r, err := s.store.WorkflowRunGet(ctx, id)
	if err != nil {
		return target{}, err
	}
	return s.graphTarget(ctx, r.Graph)
}

func (s *Server) createWorkflow(ctx context.Context, in *api.WorkflowRequest) (*store.Workflow, error) {
	if in.Name == "" || len(in.Name) > 200 {
		return nil, invalidField("name", "a workflow needs a name of 1 to 200 characters")
	}
	params := string(in.Params)
	if params == "null" {
		params = ""
	}
	if _, err := engine.ParseParams(params); err != nil {
		return nil, err
	}
	ov, err := parseWorkflowOverlap(in.WorkflowOverlap)
	if err != nil {
		return nil, err
	}
	w := &store.Workflow{Name: in.Name, Description: in.Description, Graph: string(in.Graph), Params: params,
		Concurrency: string(ov.Policy), MaxConcurrent: ov.Max}
	actx := s.auditedCtx(ctx, "workflow.create", "workflow", in.Name, func(ctx context.Context, q store.Querier) (any, error) {
		return q.WorkflowGetByName(ctx, in.Name)
	})
	if err := store.InTx(actx, s.store, func(q store.Querier) error {
		if err := checkSubWorkflows(ctx, q, w.Name, w.Graph); err != nil {
			return err
		}
		return q.WorkflowInsert(ctx, w)
	}); err != nil {
		return nil, err
	}
	return w, nil
}

func (s *Server) getWorkflow(ctx context.Context, in *WorkflowRef) (*store.Workflow, error) {
	return s.store.WorkflowGetByName(ctx, in.Name)
}

// listWorkflows keeps the workflows the reader may see: those all of whose jobs' apps are in
// their scope.
func (s *Server) listWorkflows(ctx context.Context, in *WorkflowQuery) (*WorkflowPage, error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	scope := principalFrom(ctx).ReadScope()
	page := &WorkflowPage{}
	after := in.After
	for len(page.Workflows) <= limit {
		ws, err := s.store.WorkflowList(ctx, after, limit+1)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			after = w.ID
			if t, err := s.graphTarget(ctx, w.Graph); err == nil && readableAll(scope, t.apps) {
				page.Workflows = append(page.Workflows, w)
			}
		}
		if len(ws) <= limit {
			break
		}
	}
	page.Workflows, page.More = cut(page.Workflows, limit)
	return page, nil
}

func readableAll(scope, apps []string) bool {
	for _, a := range apps {
		if !store.Readable(scope, a) {
			return false
		}
	}
	return true
}

func (s *Server) runWorkflow(ctx context.Context, in *WorkflowRunStart) (*WorkflowRunOut, error) {
	w, err := s.store.WorkflowGetByName(ctx, in.Name)
	if err != nil {
		return nil, err
	}
	params := string(in.Params)
	if params == "null" {
		params = ""
	}
	actx := s.auditedCtx(ctx, "workflow.run", "workflow", in.Name, nil)
	run, err := s.sched.Engine().StartWorkflow(actx, w.ID, params, store.CauseAPI)
	if err != nil {
		return nil, err
	}
	return s.runOut(ctx, run)
}

func (s *Server) runOut(ctx context.Context, run *store.WorkflowRun) (*WorkflowRunOut, error) {
	ns, err := s.store.WorkflowNodes(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	return &WorkflowRunOut{Run: run, Nodes: ns}, nil
}

func (s *Server) listWorkflowRuns(ctx context.Context, in *WorkflowRunQuery) (*WorkflowRunPage, error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	w, err := s.store.WorkflowGetByName(ctx, in.Name)
	if err != nil {
		return nil, err
	}
	rs, err := s.store.WorkflowRunList(ctx, w.ID, in.Before, limit+1)
	if err != nil {
		return nil, err
	}
	page := &WorkflowRunPage{}
	page.Runs, page.More = cut(rs, limit)
	return page, nil
}

func (s *Server) getWorkflowRun(ctx context.Context, in *WorkflowRunRef) (*WorkflowRunOut, error) {
	run, err := s.store.WorkflowRunGet(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	out, err := s.runOut(ctx, run)
	if err != nil {
		return nil, err
	}
	if out.Workflow, err = s.store.WorkflowGet(ctx, run.WorkflowID); errors.Is(err, store.ErrNotFound) {
		err = nil // its runs outlive it
	}
	if err != nil || run.ParentNode == 0 {
		return out, err
	}
	ps, err := s.store.WorkflowNodesGet(ctx, []int64{run.ParentNode})
	if len(ps) == 1 {
		out.Parent = ps[0]
	}
	return out, err
}

func (s *Server) cancelWorkflowRun(ctx context.Context, in *WorkflowRunRef) (*WorkflowRunOut, error) {
	actx := s.auditedCtx(ctx, "workflow.cancel", "workflow_run", strconv.FormatInt(in.ID, 10), nil)
	who := "canceled"
	if p := principalFrom(ctx); p != nil && p.User != nil {
		who = "canceled by " + p.User.Name
	}
	if _, err := s.sched.Engine().CancelWorkflowRun(actx, in.ID, who); err != nil {
		return nil, err
	}
	return s.getWorkflowRun(ctx, in)
}

// updateWorkflow replaces a workflow's description, graph and params (a compare-and-set on
// the version when the request gives one). Runs that have started keep the graph and version
// they started with; the jobs the nodes reference are read when each node starts.
func (s *Server) updateWorkflow(ctx context.Context, in *WorkflowChange) (*store.Workflow, error) {
	params := string(in.Params)
	if params == "null" {
		params = ""
	}
	if _, err := engine.ParseParams(params); err != nil {
		return nil, err
	}
	ov, err := parseWorkflowOverlap(in.WorkflowOverlap)
	if err != nil {
		return nil, err
	}
	var w *store.Workflow
	actx := s.auditedCtx(ctx, "workflow.update", "workflow", in.Name, func(ctx context.Context, q store.Querier) (any, error) {
		return q.WorkflowGetByName(ctx, in.Name)
	})
	err = store.InTx(actx, s.store, func(q store.Querier) error {
		var err error
		if w, err = q.WorkflowGetByName(ctx, in.Name); err != nil {
			return err
		}
		if in.Version != 0 && in.Version != w.Version {
			return &apiError{Status: http.StatusConflict, Code: "conflict",
				Message: fmt.Sprintf("workflow %s is at version %d, not %d: another edit came first", in.Name, w.Version, in.Version)}
		}
		w.Description, w.Graph, w.Params = in.Description, string(in.Graph), params
		w.Concurrency, w.MaxConcurrent = string(ov.Policy), ov.Max
		if err := checkSubWorkflows(ctx, q, w.Name, w.Graph); err != nil {
			return err
		}
		return q.WorkflowUpdate(ctx, w)
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// deleteWorkflow deletes a workflow whose runs have all ended: a running run would go on
// with no workflow to show it under, so it is canceled first (409 names how many). Ended
// runs stay as history.
func (s *Server) deleteWorkflow(ctx context.Context, in *WorkflowRef) (*struct{}, error) {
	actx := s.auditedCtx(ctx, "workflow.delete", "workflow", in.Name, func(ctx context.Context, q store.Querier) (any, error) {
		return q.WorkflowGetByName(ctx, in.Name)
	})
	err := store.InTx(actx, s.store, func(q store.Querier) error {
		w, err := q.WorkflowGetByName(ctx, in.Name)
		if err != nil {
			return err
		}
		err = engine.DeleteWorkflow(ctx, q, w.ID)
		if se := (*engine.StateError)(nil); errors.As(err, &se) {
			return conflict("%s", se.Msg)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}

// repaired maps the engine's refusal of a repair to 409, and answers the run with its nodes.
func (s *Server) repaired(ctx context.Context, id int64, err error) (*WorkflowRunOut, error) {
	if se := (*engine.StateError)(nil); errors.As(err, &se) {
		return nil, conflict("%s", se.Msg)
	}
	if err != nil {
		return nil, err
	}
	return s.getWorkflowRun(ctx, &WorkflowRunRef{ID: id})
}

func (s *Server) retryWorkflowRun(ctx context.Context, in *WorkflowRunRef) (*WorkflowRunOut, error) {
	actx := s.auditedCtx(ctx, "workflow.retry", "workflow_run", strconv.FormatInt(in.ID, 10), nil)
	_, err := s.sched.Engine().RetryWorkflowRun(actx, in.ID)
	return s.repaired(ctx, in.ID, err)
}

func (s *Server) retryWorkflowNode(ctx context.Context, in *WorkflowNodeRef) (*WorkflowRunOut, error) {
	actx := s.auditedCtx(ctx, "workflow.retry_node", "workflow_run", fmt.Sprintf("%d/%s", in.ID, in.Node), nil)
	_, err := s.sched.Engine().RetryWorkflowNode(actx, in.ID, in.Node)
	return s.repaired(ctx, in.ID, err)
}

func (s *Server) markWorkflowNode(ctx context.Context, in *WorkflowNodeMark) (*WorkflowRunOut, error) {
	result := string(in.Result)
	if result == "null" {
		result = ""
	}
	actx := s.auditedCtx(ctx, "workflow.mark_succeeded", "workflow_run", fmt.Sprintf("%d/%s", in.ID, in.Node), nil)
	_, err := s.sched.Engine().MarkWorkflowNodeSucceeded(actx, in.ID, in.Node, result)
	return s.repaired(ctx, in.ID, err)
}

func readWorkflowChange(r *http.Request, in *WorkflowChange) error {
	in.Name = r.PathValue("name")
	return decodeOp(r, &in.WorkflowUpdate)
}

func readWorkflowNodeRef(r *http.Request, in *WorkflowNodeRef) (err error) {
	in.Node = r.PathValue("node")
	in.ID, err = pathID(r, "id")
	return err
}

func readWorkflowNodeMark(r *http.Request, in *WorkflowNodeMark) error {
	if err := readWorkflowNodeRef(r, &in.WorkflowNodeRef); err != nil {
		return err
	}
	if r.ContentLength == 0 {
		return nil
	}
	return decodeOp(r, &in.WorkflowNodeMark)
}

// WorkflowBackfillAdd asks for a backfill of a workflow (POST /workflows/{name}/backfills).
type WorkflowBackfillAdd struct {
	Name string
	api.BackfillRequest
}

// A workflow is scheduled by its trigger jobs (handler sundial.workflow, params its name), so
// its backfill is a backfill of one of their triggers: each fire starts a workflow run marked
// backfill with the fire's data interval (engine.startRun).

// workflowBackfillTarget is the apps of the workflow's jobs and of its trigger jobs: a person
// backfills a workflow when they may run each.
func (s *Server) workflowBackfillTarget(ctx context.Context, in *WorkflowBackfillAdd) (target, error) {
	t, err := s.byWorkflow(ctx, in.Name)
	if err != nil {
		return t, err
	}
	starters, err := s.workflowStarters(ctx, in.Name)
	if err != nil {
		return t, err
	}
	for _, j := range starters {
		t.apps = append(t.apps, j.App)
	}
	return t, nil
}

// workflowStarters are the workflow's trigger jobs.
func (s *Server) workflowStarters(ctx context.Context, name string) ([]*store.Job, error) {
	var out []*store.Job
	var after int64
	for {
		js, err := s.store.JobList(ctx, store.JobFilter{Handler: engine.WorkflowHandler, AfterID: after, Limit: maxPageSize})
		if err != nil {
			return nil, err
		}
		for _, j := range js {
			if strings.TrimSpace(j.Params) == name {
				out = append(out, j)
			}
			after = j.ID
		}
		if len(js) < maxPageSize {
			return out, nil
		}
	}
}

// backfillWorkflow backfills the trigger of the workflow's trigger jobs that in.Trigger names,
// or their only one.
func (s *Server) backfillWorkflow(ctx context.Context, in *WorkflowBackfillAdd) (*api.Backfill, error) {
	if _, err := s.store.WorkflowGetByName(ctx, in.Name); err != nil {
		return nil, err
	}
	starters, err := s.workflowStarters(ctx, in.Name)
	if err != nil {
		return nil, err
	}
	var jobID int64
	var triggers int
	for _, j := range starters {
		ts, err := s.store.TriggerList(ctx, store.TriggerFilter{JobID: j.ID, Limit: maxPageSize})
		if err != nil {
			return nil, err
		}
		for _, tr := range ts {
			triggers++
			if in.Trigger == 0 || tr.ID == in.Trigger {
				jobID = j.ID
			}
		}
	}
	switch {
	case in.Trigger != 0 && jobID == 0:
		return nil, invalidField("trigger", "trigger %d is not one of workflow %s's (its trigger jobs' triggers)", in.Trigger, in.Name)
	case in.Trigger == 0 && triggers != 1:
		return nil, invalidField("trigger", "workflow %s has %d triggers (on its trigger jobs, handler %s): name the one whose schedule the backfill follows",
			in.Name, triggers, engine.WorkflowHandler)
	}
	b, err := s.createBackfill(ctx, &BackfillAdd{JobID: jobID, BackfillRequest: in.BackfillRequest})
	if err != nil {
		return nil, err
	}
	b.Workflow = in.Name
	return b, nil
}

func readWorkflowBackfillAdd(r *http.Request, in *WorkflowBackfillAdd) error {
	in.Name = r.PathValue("name")
	return decodeOp(r, &in.BackfillRequest)
}

func rawJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// parseWorkflowOverlap checks a workflow's overlap policy with the job rule's own check (the
// same names, aliases and limit); a bad one is a 400 naming concurrency or max_concurrent.
func parseWorkflowOverlap(in api.WorkflowOverlap) (jobrun.Overlap, error) {
	ov, err := jobrun.ParseOverlap(in.Concurrency, in.MaxConcurrent)
	if oe := (*jobrun.OverlapError)(nil); errors.As(err, &oe) {
		return ov, invalidField(oe.Field, "%s", oe.Msg)
	}
	return ov, err
}

func toWorkflowOut(w *store.Workflow) api.Workflow {
	return api.Workflow{ID: w.ID, Name: w.Name, Description: w.Description, Graph: rawJSON(w.Graph), Params: rawJSON(w.Params),
		WorkflowOverlap: api.WorkflowOverlap{Concurrency: w.Concurrency, MaxConcurrent: w.MaxConcurrent},
		Version:         w.Version, CreatedAt: api.Time(w.CreatedAt), UpdatedAt: api.Time(w.UpdatedAt)}
}

func toWorkflowRunOut(r *store.WorkflowRun) api.WorkflowRun {
	return api.WorkflowRun{ID: r.ID, WorkflowID: r.WorkflowID, State: r.State, Params: rawJSON(r.Params), Cause: string(r.Cause),
		Message: r.Message, CreatedAt: api.Time(r.CreatedAt), FinishedAt: api.Time(r.FinishedAt), Version: r.Version,
		DeadlineAt: api.Time(r.DeadlineAt), IntervalStart: api.Time(r.IntervalStart), IntervalEnd: api.Time(r.IntervalEnd), BackfillID: r.BackfillID}
}

func toWorkflowRunWithNodes(o *WorkflowRunOut) api.WorkflowRun {
	out := toWorkflowRunOut(o.Run)
	for _, n := range o.Nodes {
		out.Nodes = append(out.Nodes, api.WorkflowNode{Node: n.Node, State: n.State, ExecutionID: n.ExecutionID, Result: rawJSON(n.Result),
			Message: n.Message, UpdatedAt: api.Time(n.UpdatedAt), ChildRunID: n.ChildRun})
	}
	if o.Parent != nil {
		out.ParentRunID, out.ParentNode = o.Parent.RunID, o.Parent.Node
	}
	return out
}

func readWorkflowRef(r *http.Request, in *WorkflowRef) error {
	in.Name = r.PathValue("name")
	return nil
}

func readWorkflowCreate(r *http.Request, in *api.WorkflowRequest) error { return decodeOp(r, in) }

func readWorkflowQuery(r *http.Request, in *WorkflowQuery) (err error) {
	if v := r.URL.Query().Get("after"); v != "" {
		if in.After, err = strconv.ParseInt(v, 10, 64); err != nil {
			return invalidField("after", "want a workflow id, got %q", v)
		}
	}
	in.Limit, err = pageLimit(r)
	return err
}

func readWorkflowRunStart(r *http.Request, in *WorkflowRunStart) error {
	in.Name = r.PathValue("name")
	if r.ContentLength == 0 {
		return nil
	}
	return decodeOp(r, &in.WorkflowRunRequest)
}

func readWorkflowRunQuery(r *http.Request, in *WorkflowRunQuery) (err error) {
	in.Name = r.PathValue("name")
	if v := r.URL.Query().Get("after"); v != "" {
		if in.Before, err = strconv.ParseInt(v, 10, 64); err != nil {
			return invalidField("after", "want a run id, got %q", v)
		}
	}
	in.Limit, err = pageLimit(r)
	return err
}

func readWorkflowRunRef(r *http.Request, in *WorkflowRunRef) (err error) {
	in.ID, err = pathID(r, "id")
	return err
}

func writeWorkflowPage(w http.ResponseWriter, _ *http.Request, p *WorkflowPage) error {
	writeJSON(w, http.StatusOK, pageOut(p.Workflows, p.More, func(w *store.Workflow) string { return strconv.FormatInt(w.ID, 10) }, toWorkflowOut))
	return nil
}

func writeWorkflowRunPage(w http.ResponseWriter, _ *http.Request, p *WorkflowRunPage) error {
	writeJSON(w, http.StatusOK, pageOut(p.Runs, p.More, func(r *store.WorkflowRun) string { return strconv.FormatInt(r.ID, 10) }, toWorkflowRunOut))
	return nil
}

func writeWorkflowCreated(w http.ResponseWriter, _ *http.Request, wf *store.Workflow) error {
	writeJSON(w, http.StatusCreated, toWorkflowOut(wf))
	return nil
}

func writeWorkflowRunStarted(w http.ResponseWriter, _ *http.Request, o *WorkflowRunOut) error {
	w.Header().Set("Location", "/api/v1/workflow-runs/"+strconv.FormatInt(o.Run.ID, 10))
	writeJSON(w, http.StatusAccepted, toWorkflowRunWithNodes(o))
	return nil
}
