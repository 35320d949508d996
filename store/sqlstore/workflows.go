package sqlstore

import (
	"context"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

const (
	workflowCols     = "id, name, description, graph, params, concurrency, max_concurrent, version, created_at, updated_at"
	workflowRunCols  = "id, workflow_id, state, graph, params, cause, message, created_at, finished_at, workflow_version, deadline_at, parent_node, interval_start, interval_end, backfill_id"
	workflowNodeCols = "id, run_id, node, state, execution_id, input, result, message, updated_at, child_run"
)

func scanWorkflow(r rowScanner) (*store.Workflow, error) {
	var w store.Workflow
	err := r.Scan(&w.ID, &w.Name, &w.Description, &w.Graph, &w.Params, &w.Concurrency, &w.MaxConcurrent, &w.Version, &w.CreatedAt, &w.UpdatedAt)
	return &w, err
}

func scanWorkflowRun(r rowScanner) (*store.WorkflowRun, error) {
	var w store.WorkflowRun
	err := r.Scan(&w.ID, &w.WorkflowID, &w.State, &w.Graph, &w.Params, &w.Cause, &w.Message, &w.CreatedAt, &w.FinishedAt, &w.Version, &w.DeadlineAt, &w.ParentNode,
		&w.IntervalStart, &w.IntervalEnd, &w.BackfillID)
	return &w, err
}

func scanWorkflowNode(r rowScanner) (*store.WorkflowNode, error) {
	var n store.WorkflowNode
	err := r.Scan(&n.ID, &n.RunID, &n.Node, &n.State, &n.ExecutionID, &n.Input, &n.Result, &n.Message, &n.UpdatedAt, &n.ChildRun)
	return &n, err
}

// WorkflowInsert stores w; a taken name is an ExistsError.
func (e *executor) WorkflowInsert(ctx context.Context, w *store.Workflow) error {
	now := e.cfg.now()
	id, err := e.insertID(ctx, "INSERT INTO workflows (name, description, graph, params, concurrency, max_concurrent, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)",
		w.Name, w.Description, w.Graph, w.Params, w.Concurrency, w.MaxConcurrent, now, now)
	if err != nil {
		if isUniqueViolation(err) {
			return &store.ExistsError{Kind: "workflow", Key: w.Name}
		}
		return fmt.Errorf("sqlstore: insert workflow %s: %w", w.Name, err)
	}
	w.ID, w.Version, w.CreatedAt, w.UpdatedAt = id, 1, now, now
	return nil
}

func (e *executor) WorkflowGet(ctx context.Context, id int64) (*store.Workflow, error) {
	return one(scanWorkflow(e.queryRow(ctx, "SELECT "+workflowCols+" FROM workflows WHERE id = ?", id)))(fmt.Sprintf("workflow %d", id))
}

func (e *executor) WorkflowGetByName(ctx context.Context, name string) (*store.Workflow, error) {
	return one(scanWorkflow(e.queryRow(ctx, "SELECT "+workflowCols+" FROM workflows WHERE name = ?", name)))("workflow " + name)
}

// WorkflowLock reads the workflow FOR UPDATE, as WorkflowRunLock reads a run.
func (e *executor) WorkflowLock(ctx context.Context, id int64) (*store.Workflow, error) {
	return one(scanWorkflow(e.queryRow(ctx, "SELECT "+workflowCols+" FROM workflows WHERE id = ?"+e.d().lock(), id)))(fmt.Sprintf("workflow %d", id))
}

func (e *executor) WorkflowList(ctx context.Context, afterID int64, limit int) ([]*store.Workflow, error) {
	rows, err := e.query(ctx, "SELECT "+workflowCols+" FROM workflows WHERE id > ? ORDER BY id LIMIT ?", afterID, limitOr(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list workflows: %w", err)
	}
	return scanAll(rows, scanWorkflow, "workflows")
}

// WorkflowUpdate is a compare-and-set on the version.
func (e *executor) WorkflowUpdate(ctx context.Context, w *store.Workflow) error {
	now := e.cfg.now()
	res, err := e.exec(ctx, "UPDATE workflows SET description = ?, graph = ?, params = ?, concurrency = ?, max_concurrent = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?",
		w.Description, w.Graph, w.Params, w.Concurrency, w.MaxConcurrent, now, w.ID, w.Version)
	if err != nil {
		return fmt.Errorf("sqlstore: update workflow %d: %w", w.ID, err)
	}
	if n, err := affected(res); err != nil || n == 1 {
		if err == nil {
			w.Version++
			w.UpdatedAt = now
		}
		return err
	}
	if _, err := e.WorkflowGet(ctx, w.ID); err != nil {
		return err
	}
	return fmt.Errorf("workflow %d at version %d: %w", w.ID, w.Version, store.ErrConflict)
}

func (e *executor) WorkflowDelete(ctx context.Context, id int64) error {
	res, err := e.exec(ctx, "DELETE FROM workflows WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("sqlstore: delete workflow %d: %w", id, err)
	}
	if n, err := affected(res); err != nil || n == 0 {
		if err == nil {
			err = fmt.Errorf("workflow %d: %w", id, store.ErrNotFound)
		}
		return err
	}
	return nil
}

func (e *executor) WorkflowRunInsert(ctx context.Context, r *store.WorkflowRun) error {
	if r.CreatedAt == 0 {
		r.CreatedAt = e.cfg.now()
	}
	id, err := e.insertID(ctx, "INSERT INTO workflow_runs (workflow_id, state, graph, params, cause, message, created_at, finished_at, workflow_version, deadline_at, parent_node,"+
		" interval_start, interval_end, backfill_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		r.WorkflowID, r.State, r.Graph, r.Params, string(r.Cause), r.Message, r.CreatedAt, r.FinishedAt, r.Version, r.DeadlineAt, r.ParentNode,
		r.IntervalStart, r.IntervalEnd, r.BackfillID)
	if err != nil {
		return fmt.Errorf("sqlstore: insert a run of workflow %d: %w", r.WorkflowID, err)
	}
	r.ID = id
	return nil
}

func (e *executor) WorkflowRunGet(ctx context.Context, id int64) (*store.WorkflowRun, error) {
	return one(scanWorkflowRun(e.queryRow(ctx, "SELECT "+workflowRunCols+" FROM workflow_runs WHERE id = ?", id)))(fmt.Sprintf("workflow run %d", id))
}

// WorkflowRunLock reads the run FOR UPDATE (SQLite's transactions hold the database's write
// lock already). Under READ COMMITTED, which every dialect's transactions use, the reads
// that follow the lock see what the run's previous holder committed.
func (e *executor) WorkflowRunLock(ctx context.Context, id int64) (*store.WorkflowRun, error) {
	return one(scanWorkflowRun(e.queryRow(ctx, "SELECT "+workflowRunCols+" FROM workflow_runs WHERE id = ?"+e.d().lock(), id)))(fmt.Sprintf("workflow run %d", id))
}

func (e *executor) WorkflowRunList(ctx context.Context, workflowID, beforeID int64, limit int) ([]*store.WorkflowRun, error) {
	where, args := "1 = 1", []any{}
	if workflowID != 0 {
		where, args = where+" AND workflow_id = ?", append(args, workflowID)
	}
	if beforeID != 0 {
		where, args = where+" AND id < ?", append(args, beforeID)
	}
	rows, err := e.query(ctx, "SELECT "+workflowRunCols+" FROM workflow_runs WHERE "+where+" ORDER BY id DESC LIMIT ?", append(args, limitOr(limit))...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list runs of workflow %d: %w", workflowID, err)
	}
	return scanAll(rows, scanWorkflowRun, "workflow runs")
}

// WorkflowRunsOverdue reads running runs whose deadline has passed, by the (state,
// deadline_at) index.
func (e *executor) WorkflowRunsOverdue(ctx context.Context, now int64, limit int) ([]*store.WorkflowRun, error) {
	rows, err := e.query(ctx, "SELECT "+workflowRunCols+" FROM workflow_runs WHERE state = 'running' AND deadline_at > 0 AND deadline_at <= ? ORDER BY deadline_at LIMIT ?",
		now, limitOr(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list overdue workflow runs: %w", err)
	}
	return scanAll(rows, scanWorkflowRun, "workflow runs")
}

func (e *executor) WorkflowRunsRunning(ctx context.Context, workflowID int64) (int, error) {
	var n int
	if err := e.queryRow(ctx, "SELECT COUNT(*) FROM workflow_runs WHERE workflow_id = ? AND state = 'running'", workflowID).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlstore: count running runs of workflow %d: %w", workflowID, err)
	}
	return n, nil
}

func (e *executor) WorkflowRunsInState(ctx context.Context, workflowID int64, state string, limit int) ([]*store.WorkflowRun, error) {
	where, args := "state = ?", []any{state}
	if workflowID != 0 {
		where, args = "workflow_id = ? AND "+where, []any{workflowID, state}
	}
	rows, err := e.query(ctx, "SELECT "+workflowRunCols+" FROM workflow_runs WHERE "+where+" ORDER BY id LIMIT ?", append(args, limitOr(limit))...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list %s runs of workflow %d: %w", state, workflowID, err)
	}
	return scanAll(rows, scanWorkflowRun, "workflow runs")
}

func (e *executor) WorkflowRunsLiveOfBackfill(ctx context.Context, backfillID int64) (int, error) {
	var n int
	if err := e.queryRow(ctx, "SELECT COUNT(*) FROM workflow_runs WHERE backfill_id = ? AND state IN ('running', 'queued')", backfillID).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlstore: count running workflow runs of backfill %d: %w", backfillID, err)
	}
	return n, nil
}

func (e *executor) WorkflowRunFinish(ctx context.Context, id int64, state, message string, finishedAt int64) (bool, error) {
	res, err := e.exec(ctx, "UPDATE workflow_runs SET state = ?, message = ?, finished_at = ? WHERE id = ? AND state IN ('running', 'queued')",
		state, truncate(message, 2000), finishedAt, id)
	if err != nil {
		return false, fmt.Errorf("sqlstore: finish workflow run %d: %w", id, err)
	}
	n, err := affected(res)
	return n == 1, err
}

// WorkflowRunsDeleteFinishedBefore deletes a batch of old ended runs: their nodes first, so
// a delete cut short leaves a run without nodes, which the next batch deletes, and never
// nodes without their run.
func (e *executor) WorkflowRunsDeleteFinishedBefore(ctx context.Context, before int64, limit int) (int64, error) {
	rows, err := e.query(ctx, "SELECT id FROM workflow_runs WHERE state <> 'running' AND finished_at > 0 AND finished_at < ? ORDER BY id LIMIT ?",
		before, limitOr(limit))
	if err != nil {
		return 0, fmt.Errorf("sqlstore: old workflow runs: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var n int64
	for _, c := range chunks(len(ids)) {
		in, args := inList(ids[c[0]:c[1]])
		if _, err := e.exec(ctx, "DELETE FROM workflow_nodes WHERE run_id IN "+in, args...); err != nil {
			return n, fmt.Errorf("sqlstore: delete the nodes of old workflow runs: %w", err)
		}
		res, err := e.exec(ctx, "DELETE FROM workflow_runs WHERE id IN "+in, args...)
		if err != nil {
			return n, fmt.Errorf("sqlstore: delete old workflow runs: %w", err)
		}
		k, err := affected(res)
		if err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// WorkflowRunReopen is a compare-and-set on the run's state.
func (e *executor) WorkflowRunReopen(ctx context.Context, id int64, from string, deadlineAt int64) (bool, error) {
	res, err := e.exec(ctx, "UPDATE workflow_runs SET state = 'running', message = '', finished_at = 0, deadline_at = ? WHERE id = ? AND state = ?",
		deadlineAt, id, from)
	if err != nil {
		return false, fmt.Errorf("sqlstore: reopen workflow run %d: %w", id, err)
	}
	n, err := affected(res)
	return n == 1, err
}

func (e *executor) WorkflowNodesDelete(ctx context.Context, runID int64, ids []int64) error {
	for _, c := range chunks(len(ids)) {
		in, args := inList(ids[c[0]:c[1]])
		if _, err := e.exec(ctx, "DELETE FROM workflow_nodes WHERE run_id = ? AND id IN "+in, append([]any{runID}, args...)...); err != nil {
			return fmt.Errorf("sqlstore: delete %d nodes of workflow run %d: %w", len(ids), runID, err)
		}
	}
	return nil
}

func (e *executor) WorkflowNodesInsert(ctx context.Context, ns []*store.WorkflowNode) error {
	for _, n := range ns {
		if n.UpdatedAt == 0 {
			n.UpdatedAt = e.cfg.now()
		}
		id, err := e.insertID(ctx, "INSERT INTO workflow_nodes (run_id, node, state, execution_id, input, result, message, updated_at, child_run) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
			n.RunID, n.Node, n.State, n.ExecutionID, n.Input, n.Result, truncate(n.Message, 2000), n.UpdatedAt, n.ChildRun)
		if err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("node %s of workflow run %d: %w", n.Node, n.RunID, store.ErrAlreadyExists)
			}
			return fmt.Errorf("sqlstore: insert node %s of workflow run %d: %w", n.Node, n.RunID, err)
		}
		n.ID = id
	}
	return nil
}

func (e *executor) WorkflowNodes(ctx context.Context, runID int64) ([]*store.WorkflowNode, error) {
	rows, err := e.query(ctx, "SELECT "+workflowNodeCols+" FROM workflow_nodes WHERE run_id = ? ORDER BY id", runID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list nodes of workflow run %d: %w", runID, err)
	}
	return scanAll(rows, scanWorkflowNode, "workflow nodes")
}

func (e *executor) WorkflowNodesGet(ctx context.Context, ids []int64) ([]*store.WorkflowNode, error) {
	var out []*store.WorkflowNode
	for _, c := range chunks(len(ids)) {
		in, args := inList(ids[c[0]:c[1]])
		rows, err := e.query(ctx, "SELECT "+workflowNodeCols+" FROM workflow_nodes WHERE id IN "+in, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: get %d workflow nodes: %w", len(ids), err)
		}
		ns, err := scanAll(rows, scanWorkflowNode, "workflow nodes")
		if err != nil {
			return nil, err
		}
		out = append(out, ns...)
	}
	return out, nil
}

func (e *executor) WorkflowNodeUpdate(ctx context.Context, n *store.WorkflowNode, from string) (bool, error) {
	if n.UpdatedAt == 0 {
		n.UpdatedAt = e.cfg.now()
	}
	res, err := e.exec(ctx, "UPDATE workflow_nodes SET state = ?, execution_id = ?, result = ?, message = ?, updated_at = ?, child_run = ? WHERE id = ? AND state = ?",
		n.State, n.ExecutionID, n.Result, truncate(n.Message, 2000), n.UpdatedAt, n.ChildRun, n.ID, from)
	if err != nil {
		return false, fmt.Errorf("sqlstore: update node %s of workflow run %d: %w", n.Node, n.RunID, err)
	}
	c, err := affected(res)
	return c == 1, err
}

// ExecutionsCancelUnstarted ends the pending and acquired executions among ids as canceled.
func (e *executor) ExecutionsCancelUnstarted(ctx context.Context, ids []int64, msg string) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	now := e.cfg.now()
	moved, err := e.moveToHistory(ctx, ids, "state IN ('pending', 'acquired')", nil, func(x *store.Execution) {
		x.State, x.HandleMsg, x.FinishedAt = store.ExecCanceled, truncate(msg, 2000), now
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: cancel %d unstarted executions: %w", len(ids), err)
	}
	out := make([]int64, len(moved))
	for i, x := range moved {
		out[i] = x.ID
	}
	return out, nil
}
