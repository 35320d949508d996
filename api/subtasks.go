package api

import (
	"context"
	"encoding/json"
)

// Subtask is one sub-task of a map/reduce run (GET /executions/{id}/subtasks): its parent
// execution, the sub-task that mapped it (0 for the run's own handler), and its latest
// attempt. Payload and Result are the JSON the handler mapped and the task returned.
type Subtask struct {
	ID          int64           `json:"id"`
	ExecutionID int64           `json:"execution_id"`
	ParentID    int64           `json:"parent_id"`
	Depth       int             `json:"depth"`
	Seq         int             `json:"seq"`
	State       string          `json:"state"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	Owner       string          `json:"owner,omitempty"`
	Payload     json.RawMessage `json:"payload"`
	Result      json.RawMessage `json:"result,omitempty"`
	Message     string          `json:"message,omitempty"`
	CreatedAt   Time            `json:"created_at"`
	FinishedAt  Time            `json:"finished_at,omitempty"`
}

// SubtaskPage is a page of a run's sub-tasks with the counts of all of them by state (a run
// that mapped nothing has none).
type SubtaskPage struct {
	Page[Subtask]
	Counts map[string]int64 `json:"counts"`
}

// ListSubtasks returns a page of the sub-tasks of execution id, by id, of one state or all
// ("").
func (c *Client) ListSubtasks(ctx context.Context, id int64, state string, o ListOptions) (*SubtaskPage, error) {
	q := o.query()
	if state != "" {
		q.Set("state", state)
	}
	return get[SubtaskPage](ctx, c, idPath("/executions", id, "/subtasks"), q)
}
