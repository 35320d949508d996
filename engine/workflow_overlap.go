package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/workflow"
)

// This file holds a workflow's overlap policy: the job rule (jobrun.Overlap.Decide) applied
// to the runs of one workflow, counted in the database under the workflow's row lock
// (WorkflowLock), so every scheduler node decides on the same runs. A run the policy holds
// back is stored queued, without nodes; a queued run starts when a run of its workflow ends
// (workflowRunsEnded) or, should the node that ended it die first, at the leader's next
// sweep (TimeOutWorkflows).

// WorkflowOverlap is a workflow's overlap policy; a stored policy that no longer parses is
// allow, as for a job.
func WorkflowOverlap(w *store.Workflow) jobrun.Overlap {
	o, err := jobrun.ParseOverlap(w.Concurrency, w.MaxConcurrent)
	if err != nil {
		return jobrun.Overlap{Policy: jobrun.Allow}
	}
	return o
}

// maxLive bounds the runs of one workflow a decision reads (at_most allows up to
// jobrun.MaxLimit running).
const maxLive = jobrun.MaxLimit + 1

// applyWorkflowOverlap sets the state of run, about to be inserted, by w's policy and the
// workflow's running and queued runs; w's row is locked. The queued runs the policy drops are
// ended skipped here; the running runs it cancels go to st.replace.
func (e *Engine) applyWorkflowOverlap(ctx context.Context, q store.Querier, w *store.Workflow, run *store.WorkflowRun, st *started, now time.Time) error {
	o := WorkflowOverlap(w)
	st.policy = o.Policy
	if o.Limit() == 0 {
		return nil
	}
	running, err := q.WorkflowRunsInState(ctx, w.ID, string(workflow.RunRunning), maxLive)
	if err != nil {
		return err
	}
	queued, err := q.WorkflowRunsInState(ctx, w.ID, string(workflow.RunQueued), maxLive)
	if err != nil {
		return err
	}
	d := o.Decide(len(running))
	if d.DropQueued {
		msg := fmt.Sprintf("skipped: a newer run of the workflow came while it waited (overlap policy %s)", o.Policy)
		for _, r := range queued {
			moved, err := q.WorkflowRunFinish(ctx, r.ID, string(workflow.RunSkipped), msg, now.UnixMilli())
			if err != nil {
				return err
			}
			if moved {
				st.ended = append(st.ended, r.ID)
			}
		}
		queued = nil
	}
	if d.CancelActive {
		for _, r := range running {
			st.replace = append(st.replace, r.ID)
		}
	}
	switch {
	case d.Admission == jobrun.Skipped:
		run.State, run.FinishedAt = string(workflow.RunSkipped), now.UnixMilli()
		run.Message = "skipped: an earlier run of the workflow still runs (overlap policy skip)"
	case d.Admission == jobrun.Queued, len(queued) > 0:
		// Runs that wait go first: one that finds others waiting waits behind them, even when
		// a run has just ended and they have not been started yet.
		run.State = string(workflow.RunQueued)
	}
	return nil
}

// afterStart ends, after the commit, the running runs the starts' policies cancel (cancel,
// terminate: through endRun, which kills their running node executions), and reports the
// runs that ended.
func (e *Engine) afterStart(ctx context.Context, sts []started) {
	var ended []int64
	for _, st := range sts {
		ended = append(ended, st.ended...)
	}
	e.workflowRunsEnded(ctx, ended)
	for _, st := range sts {
		for _, id := range st.replace {
			msg := fmt.Sprintf("canceled: run %d of the workflow replaces it (overlap policy %s)", st.run.ID, st.policy)
			if _, err := e.endRun(ctx, id, workflow.RunCanceled, msg); err != nil {
				e.log.Error("canceling a workflow run a newer run replaces", "run", id, "by", st.run.ID, "err", err)
			}
		}
	}
}

// workflowRunsEnded is told of every workflow run that has ended, once its end has committed:
// the runs of those runs' workflows that wait may start.
func (e *Engine) workflowRunsEnded(ctx context.Context, ids []int64) {
	if len(ids) == 0 {
		return
	}
	e.signals.workflowsEnded(ids)
	seen := map[int64]bool{}
	for _, id := range ids {
		r, err := e.store.WorkflowRunGet(ctx, id)
		if err != nil {
			e.log.Error("reading an ended workflow run", "run", id, "err", err)
			continue
		}
		if seen[r.WorkflowID] {
			continue
		}
		seen[r.WorkflowID] = true
		if err := e.startQueued(ctx, r.WorkflowID); err != nil {
			e.log.Error("starting the queued runs of a workflow", "workflow", r.WorkflowID, "err", err)
		}
	}
}

// startQueued starts the workflow's queued runs, oldest first, while its policy has room for
// them, under the workflow's row lock.
func (e *Engine) startQueued(ctx context.Context, workflowID int64) error {
	waiting, err := e.store.WorkflowRunsInState(ctx, workflowID, string(workflow.RunQueued), 1)
	if err != nil || len(waiting) == 0 {
		return err // the common case: nothing waits, and no lock is taken
	}
	var ended []int64
	err = store.InTx(ctx, e.store, func(q store.Querier) error {
		ended = nil
		w, err := q.WorkflowLock(ctx, workflowID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		limit := WorkflowOverlap(w).Limit()
		queued, err := q.WorkflowRunsInState(ctx, workflowID, string(workflow.RunQueued), maxLive)
		if err != nil {
			return err
		}
		running, err := q.WorkflowRunsRunning(ctx, workflowID)
		if err != nil {
			return err
		}
		now := e.clock.Now()
		for _, r := range queued {
			if limit != 0 && running >= limit {
				break
			}
			g, err := ParseGraph(r.Graph)
			if err != nil {
				return fmt.Errorf("workflow run %d: %w", r.ID, err)
			}
			if g.TimeoutMs > 0 {
				r.DeadlineAt = now.UnixMilli() + g.TimeoutMs
			}
			moved, err := q.WorkflowRunReopen(ctx, r.ID, string(workflow.RunQueued), r.DeadlineAt)
			if err != nil {
				return err
			}
			if !moved {
				continue // canceled meanwhile
			}
			r.State = string(workflow.RunRunning)
			if err := e.stepRun(ctx, q, r, g, now); err != nil {
				return fmt.Errorf("start queued workflow run %d: %w", r.ID, err)
			}
			if r.State != string(workflow.RunRunning) {
				ended = append(ended, r.ID)
			}
			running++
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.workflowRunsEnded(ctx, ended)
	e.Wake()
	return nil
}

// startQueuedAll starts the queued runs of every workflow that has some: the leader's sweep,
// for the runs whose start was due when a run ended on a node that died before starting them.
func (e *Engine) startQueuedAll(ctx context.Context) error {
	queued, err := e.store.WorkflowRunsInState(ctx, 0, string(workflow.RunQueued), 1000)
	if err != nil {
		return err
	}
	seen := map[int64]bool{}
	for _, r := range queued {
		if !seen[r.WorkflowID] {
			seen[r.WorkflowID] = true
			if err := e.startQueued(ctx, r.WorkflowID); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteWorkflow deletes the workflow in q, under the row lock a run's start takes: a start
// waits for the delete and finds the workflow gone, or the delete sees the run it started.
// A workflow with running or queued runs is refused with a *StateError (they would go on
// with no workflow to show them under); ended runs stay as history.
func DeleteWorkflow(ctx context.Context, q store.Querier, id int64) error {
	w, err := q.WorkflowLock(ctx, id)
	if err != nil {
		return err
	}
	running, err := q.WorkflowRunsRunning(ctx, id)
	if err != nil {
		return err
	}
	queued, err := q.WorkflowRunsInState(ctx, id, string(workflow.RunQueued), maxLive)
	if err != nil {
		return err
	}
	if running+len(queued) > 0 {
		return &StateError{Msg: fmt.Sprintf("workflow %s has %d running and %d queued runs: cancel them first", w.Name, running, len(queued))}
	}
	return q.WorkflowDelete(ctx, id)
}
