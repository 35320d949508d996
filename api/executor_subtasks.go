package api

import (
	"context"
	"encoding/json"
)

// The executor side of map/reduce (docs/executor-protocol.md, "Map/reduce"): calls an
// executor makes with its app's credential and its instance's proof, over HTTP or up its
// stream. Their paths, under the server's base URL:
const (
	PathSubtasksMap     = "/api/v1/executor/subtasks/map"
	PathSubtasksClaim   = "/api/v1/executor/subtasks/claim"
	PathSubtasksResults = "/api/v1/executor/subtasks/results"
	PathSubtasksList    = "/api/v1/executor/subtasks/list"
	PathSubtasksReduced = "/api/v1/executor/subtasks/reduced"
)

// CodeMapLimit is the error code of a map past the server's depth or size limit (409).
const CodeMapLimit = "map_limit"

// MapRequest maps payloads as sub-tasks of ExecutionID: from its Start (ParentID 0, sent by
// the instance the run was handed to) or from a Task (ParentID the sub-task, sent by the
// instance that holds its attempt ParentAttempt). Seq numbers the first payload: a Start or
// Task run again maps the same (parent, seq) keys, which are not added twice.
type MapRequest struct {
	ExecutionID   int64             `json:"execution_id"`
	ParentID      int64             `json:"parent_id,omitempty"`
	ParentAttempt int               `json:"parent_attempt,omitempty"`
	Seq           int               `json:"seq"`
	Payloads      []json.RawMessage `json:"payloads"`
}

// MapResponse says how many sub-tasks the map added (a repeated map adds none).
type MapResponse struct {
	Added int `json:"added"`
}

// ClaimRequest asks for up to Limit pending sub-tasks of the app's jobs whose handler is one
// of Handlers, and, with Maps, maps of those handlers whose sub-tasks have all ended, to reduce.
type ClaimRequest struct {
	Handlers []string `json:"handlers"`
	Limit    int      `json:"limit"`
	Maps     int      `json:"maps,omitempty"`
}

// ClaimedSubtask is one claimed attempt of a sub-task.
type ClaimedSubtask struct {
	ID          int64           `json:"id"`
	ExecutionID int64           `json:"execution_id"`
	Handler     string          `json:"handler"`
	ParentID    int64           `json:"parent_id"`
	Depth       int             `json:"depth"`
	Attempt     int             `json:"attempt"`
	Payload     json.RawMessage `json:"payload"`
}

// ClaimedMap is a map the caller now reduces.
type ClaimedMap struct {
	ExecutionID int64  `json:"execution_id"`
	Handler     string `json:"handler"`
	Total       int64  `json:"total"`
}

// ClaimResponse is what a claim took.
type ClaimResponse struct {
	Subtasks []ClaimedSubtask `json:"subtasks"`
	Maps     []ClaimedMap     `json:"maps"`
}

// SubtaskOutcome is the result of one claimed attempt: State "succeeded" (Result its JSON) or
// "failed" (Message why; it goes back to pending while the job's retries last).
type SubtaskOutcome struct {
	ID      int64           `json:"id"`
	Attempt int             `json:"attempt"`
	State   string          `json:"state"`
	Result  json.RawMessage `json:"result,omitempty"`
	Message string          `json:"message,omitempty"`
}

// SubtaskResults reports outcomes (at most 1,000 a call).
type SubtaskResults struct {
	Results []SubtaskOutcome `json:"results"`
}

// SubtaskAccepted lists the sub-tasks whose outcome was accepted: an attempt the caller does
// not hold (another's, or released since) is not, and changes nothing.
type SubtaskAccepted struct {
	Accepted []int64 `json:"accepted"`
}

// SubtaskListRequest reads a page of the sub-tasks of a map the caller reduces, by id.
type SubtaskListRequest struct {
	ExecutionID int64 `json:"execution_id"`
	AfterID     int64 `json:"after_id,omitempty"`
	Limit       int   `json:"limit,omitempty"`
}

// ReducedRequest completes the run whose map the caller reduced, with Reduce's outcome
// (State "succeeded" or "failed").
type ReducedRequest struct {
	ExecutionID int64           `json:"execution_id"`
	State       string          `json:"state"`
	Message     string          `json:"message,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	StartedAt   int64           `json:"started_at,omitempty"`
}

// ReducedResponse says whether the run completed (false: it had ended already).
type ReducedResponse struct {
	Completed bool `json:"completed"`
}

// ExecutorCaller sends one executor call: the SDK's, which signs it with the app's credential
// and the instance's proof and sends it over HTTP or up a stream, to whichever node answers.
type ExecutorCaller interface {
	Post(ctx context.Context, path string, in, out any) error
}

// SubtaskClient is the typed client of the executor's map/reduce calls.
type SubtaskClient struct{ C ExecutorCaller }

// Map stores payloads as sub-tasks (see MapRequest).
func (c SubtaskClient) Map(ctx context.Context, r MapRequest) (*MapResponse, error) {
	return postAs[MapResponse](ctx, c.C, PathSubtasksMap, r)
}

// Claim claims sub-tasks and ready maps for the caller's instance.
func (c SubtaskClient) Claim(ctx context.Context, r ClaimRequest) (*ClaimResponse, error) {
	return postAs[ClaimResponse](ctx, c.C, PathSubtasksClaim, r)
}

// Results reports outcomes of attempts the caller holds.
func (c SubtaskClient) Results(ctx context.Context, r SubtaskResults) (*SubtaskAccepted, error) {
	return postAs[SubtaskAccepted](ctx, c.C, PathSubtasksResults, r)
}

// List reads a page of the sub-tasks of a map the caller reduces.
func (c SubtaskClient) List(ctx context.Context, r SubtaskListRequest) ([]Subtask, error) {
	out, err := postAs[[]Subtask](ctx, c.C, PathSubtasksList, r)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// Reduced completes a reduced run.
func (c SubtaskClient) Reduced(ctx context.Context, r ReducedRequest) (*ReducedResponse, error) {
	return postAs[ReducedResponse](ctx, c.C, PathSubtasksReduced, r)
}

func postAs[T any](ctx context.Context, c ExecutorCaller, path string, in any) (*T, error) {
	out := new(T)
	if err := c.Post(ctx, path, in, out); err != nil {
		return nil, err
	}
	return out, nil
}
