package api

import (
	"context"
	"encoding/json"

	"strconv"
)

// WorkflowRequest is the body of POST /workflows: a named DAG whose nodes reference jobs by
// id or decide by an expression, and the default params of its runs. The server rejects
// unknown fields and names the field of a bad graph (nodes[1].job_id, edges, ...), a cycle
// with the cycle.
type WorkflowRequest struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Graph       json.RawMessage `json:"graph"`
	Params      json.RawMessage `json:"params,omitempty"`
}

// Workflow is a stored workflow.
type Workflow struct {
	ID          int64           `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Graph       json.RawMessage `json:"graph"`
	Params      json.RawMessage `json:"params,omitempty"`
	Version     int64           `json:"version"`
	CreatedAt   Time            `json:"created_at"`
	UpdatedAt   Time            `json:"updated_at"`
}

// WorkflowRunRequest is the body of POST /workflows/{name}/run: params replace the
// workflow's own when given.
type WorkflowRunRequest struct {
	Params json.RawMessage `json:"params,omitempty"`
}

// WorkflowRun is one run of a workflow, with its nodes' states when read alone.
type WorkflowRun struct {
	ID         int64           `json:"id"`
	WorkflowID int64           `json:"workflow_id"`
	State      string          `json:"state"`
	Params     json.RawMessage `json:"params,omitempty"`
	Cause      string          `json:"cause"`
	Message    string          `json:"message,omitempty"`
	CreatedAt  Time            `json:"created_at"`
	FinishedAt Time            `json:"finished_at,omitempty"`
	// IntervalStart and IntervalEnd are the data interval of the fire that started the run (its
	// trigger job's, or a backfill's), given to each node's execution; BackfillID names the
	// backfill that made it.
	IntervalStart Time           `json:"interval_start,omitzero"`
	IntervalEnd   Time           `json:"interval_end,omitzero"`
	BackfillID    int64          `json:"backfill_id,omitempty"`
	Nodes         []WorkflowNode `json:"nodes,omitempty"`
}

// WorkflowNode is the state of one node of a run, linked to its newest execution.
type WorkflowNode struct {
	Node        string          `json:"node"`
	State       string          `json:"state"`
	ExecutionID int64           `json:"execution_id,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Message     string          `json:"message,omitempty"`
	UpdatedAt   Time            `json:"updated_at"`
}

// CreateWorkflow stores a workflow.
func (c *Client) CreateWorkflow(ctx context.Context, req WorkflowRequest) (*Workflow, error) {
	return post[Workflow](ctx, c, "POST", v1+"/workflows", req)
}

// BackfillWorkflow runs the workflow for every scheduled time of its trigger in req's range:
// a backfill of its trigger job, each run a workflow run marked backfill with its data
// interval; with req.DryRun it returns the plan and stores nothing.
func (c *Client) BackfillWorkflow(ctx context.Context, name string, req BackfillRequest) (*Backfill, error) {
	return post[Backfill](ctx, c, "POST", namePath("/workflows", name)+"/backfills", req)
}

// GetWorkflow returns a workflow by name.
func (c *Client) GetWorkflow(ctx context.Context, name string) (*Workflow, error) {
	return get[Workflow](ctx, c, namePath("/workflows", name), nil)
}

// ListWorkflows lists workflows by id.
func (c *Client) ListWorkflows(ctx context.Context, o ListOptions) (*Page[Workflow], error) {
	return get[Page[Workflow]](ctx, c, v1+"/workflows", o.query())
}

// RunWorkflow starts a run of the workflow now; params (a JSON object) replace the
// workflow's when not empty.
func (c *Client) RunWorkflow(ctx context.Context, name string, params json.RawMessage) (*WorkflowRun, error) {
	return post[WorkflowRun](ctx, c, "POST", namePath("/workflows", name)+"/run", WorkflowRunRequest{Params: params})
}

// ListWorkflowRuns lists the runs of a workflow, newest first.
func (c *Client) ListWorkflowRuns(ctx context.Context, name string, o ListOptions) (*Page[WorkflowRun], error) {
	return get[Page[WorkflowRun]](ctx, c, namePath("/workflows", name)+"/runs", o.query())
}

// GetWorkflowRun returns a run with its nodes.
func (c *Client) GetWorkflowRun(ctx context.Context, id int64) (*WorkflowRun, error) {
	return get[WorkflowRun](ctx, c, v1+"/workflow-runs/"+strconv.FormatInt(id, 10), nil)
}

// CancelWorkflowRun cancels a running run: its pending nodes never start.
func (c *Client) CancelWorkflowRun(ctx context.Context, id int64) (*WorkflowRun, error) {
	return post[WorkflowRun](ctx, c, "POST", v1+"/workflow-runs/"+strconv.FormatInt(id, 10)+"/cancel", nil)
}
