package api

import (
	"context"
	"encoding/json"
	"net/url"
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
	WorkflowOverlap
}

// WorkflowOverlap is a workflow's overlap policy, named as a job's (docs/policies.md,
// "Workflow runs"): what a run does that starts while earlier runs of the workflow run.
// Empty is allow; max_concurrent goes with at_most only.
type WorkflowOverlap struct {
	Concurrency   string `json:"concurrency,omitempty"`
	MaxConcurrent int    `json:"max_concurrent,omitempty"`
}

// Workflow is a stored workflow.
type Workflow struct {
	ID          int64           `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Graph       json.RawMessage `json:"graph"`
	Params      json.RawMessage `json:"params,omitempty"`
	WorkflowOverlap
	Version   int64 `json:"version"`
	CreatedAt Time  `json:"created_at"`
	UpdatedAt Time  `json:"updated_at"`
}

// WorkflowUpdate is the body of PUT /workflows/{name}: the workflow's new description, graph
// and params. Version, when not 0, must be the workflow's current version (a compare-and-set:
// 409 when another edit came first). Running runs keep the graph they started with.
type WorkflowUpdate struct {
	Description string          `json:"description,omitempty"`
	Graph       json.RawMessage `json:"graph"`
	Params      json.RawMessage `json:"params,omitempty"`
	WorkflowOverlap
	Version int64 `json:"version,omitempty"`
}

// WorkflowNodeMark is the body of POST /workflow-runs/{id}/nodes/{node}/mark-succeeded: the
// node's result, as its children see it (none when empty).
type WorkflowNodeMark struct {
	Result json.RawMessage `json:"result,omitempty"`
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
	// Version is the workflow's version the run started with (it keeps that graph).
	Version    int64 `json:"workflow_version,omitempty"`
	DeadlineAt Time  `json:"deadline_at,omitempty"`
	CreatedAt  Time  `json:"created_at"`
	FinishedAt Time  `json:"finished_at,omitempty"`
	// IntervalStart and IntervalEnd are the data interval of the fire that started the run (its
	// trigger job's, or a backfill's), given to each node's execution; BackfillID names the
	// backfill that made it.
	IntervalStart Time  `json:"interval_start,omitzero"`
	IntervalEnd   Time  `json:"interval_end,omitzero"`
	BackfillID    int64 `json:"backfill_id,omitempty"`
	// ParentRunID and ParentNode name the run and sub-workflow node this run runs for (a
	// sub-workflow run), when read alone; absent for a run of its own.
	ParentRunID int64          `json:"parent_run_id,omitempty"`
	ParentNode  string         `json:"parent_node,omitempty"`
	Nodes       []WorkflowNode `json:"nodes,omitempty"`
}

// WorkflowNode is the state of one node of a run, linked to its newest execution.
type WorkflowNode struct {
	Node        string `json:"node"`
	State       string `json:"state"`
	ExecutionID int64  `json:"execution_id,omitempty"`
	// ChildRunID is the run a sub-workflow node started (its newest, once retried).
	ChildRunID int64           `json:"child_run_id,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Message    string          `json:"message,omitempty"`
	UpdatedAt  Time            `json:"updated_at"`
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

func runPath(id int64) string { return v1 + "/workflow-runs/" + strconv.FormatInt(id, 10) }

// UpdateWorkflow replaces a workflow's description, graph and params.
func (c *Client) UpdateWorkflow(ctx context.Context, name string, req WorkflowUpdate) (*Workflow, error) {
	return post[Workflow](ctx, c, "PUT", namePath("/workflows", name), req)
}

// DeleteWorkflow deletes a workflow that has no running run (409 otherwise); its runs stay
// as history.
func (c *Client) DeleteWorkflow(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", namePath("/workflows", name), nil, nil, nil)
}

// RetryWorkflowRun runs again every node of the run that failed or was canceled, reopening
// the run: a retry from its failed nodes.
func (c *Client) RetryWorkflowRun(ctx context.Context, id int64) (*WorkflowRun, error) {
	return post[WorkflowRun](ctx, c, "POST", runPath(id)+"/retry", nil)
}

// RetryWorkflowNode runs one node of the run again (a node that failed or was canceled).
func (c *Client) RetryWorkflowNode(ctx context.Context, id int64, node string) (*WorkflowRun, error) {
	return post[WorkflowRun](ctx, c, "POST", runPath(id)+"/nodes/"+url.PathEscape(node)+"/retry", nil)
}

// MarkWorkflowNodeSucceeded records a node that has not succeeded as succeeded, with result
// (JSON, nil for none) as what its children are given.
func (c *Client) MarkWorkflowNodeSucceeded(ctx context.Context, id int64, node string, result json.RawMessage) (*WorkflowRun, error) {
	return post[WorkflowRun](ctx, c, "POST", runPath(id)+"/nodes/"+url.PathEscape(node)+"/mark-succeeded", WorkflowNodeMark{Result: result})
}
