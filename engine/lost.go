package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/internal/backoff"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// This file holds the job policy for runs that end without a result of their own — lost with
// their node or their executor — and for runs a person asks to run again: which run follows,
// when, and who is told. The HTTP layer and the leader's services call these operations; no
// other package decides them.

// lossCause says what a run was lost with; the rules that follow differ.
type lossCause int

const (
	// lostWithNode: the node that ran it in process died. The job's RequestsRecovery decides
	// whether it runs again, at its original time.
	lostWithNode lossCause = iota
	// lostWithExecutor: the executor it was handed to went silent. The job's retries apply,
	// as for a failure.
	lostWithExecutor
)

// LossOutcome tells what became of the runs one loss declared lost.
type LossOutcome struct {
	Lost     int // executions moved running → lost
	FollowUp int // retries or recoveries inserted for them
	Alarmed  int // executions whose alarm was made pending: their loss is final
}

// LoseOnExecutor declares lost the running executions of the app's jobs handed to the
// executor at address (it went silent) and retries each per its job, in one transaction: the
// move running → lost is a compare-and-set, so a result that arrives first wins and a lost
// execution is retried once. A lost broadcast shard is retried alone, as that shard. The
// alarm of a loss with no retry left is made pending in the same transaction; the caller may
// wake the alarm delivery when Alarmed > 0.
func (e *Engine) LoseOnExecutor(ctx context.Context, app, address string) (LossOutcome, error) {
	return e.loseOnExecutor(ctx, app, address, func(tx store.Tx) ([]*store.Execution, error) {
		return tx.ExecutionsLoseOnExecutor(ctx, app, address)
	})
}

// loseOnExecutor is LoseOnExecutor for the runs on the executor that lose moves to lost in tx.
func (e *Engine) loseOnExecutor(ctx context.Context, app, address string, lose func(tx store.Tx) ([]*store.Execution, error)) (LossOutcome, error) {
	tx, err := e.store.Begin(ctx)
	if err != nil {
		return LossOutcome{}, err
	}
	defer tx.Rollback()
	lost, err := lose(tx)
	if err != nil {
		return LossOutcome{}, fmt.Errorf("lose the runs on executor %s of %s: %w", address, app, err)
	}
	out, ended, err := e.continueLost(ctx, tx, lost, lostWithExecutor)
	if err != nil {
		return LossOutcome{}, fmt.Errorf("executor %s of %s: %w", address, app, err)
	}
	if err := tx.Commit(); err != nil {
		return LossOutcome{}, err
	}
	e.lostOnExecutor(ctx, out, ended)
	return out, nil
}

// lostOnExecutor follows a committed loss of runs on executors: the workflow runs it ended,
// the count, and a wake for the runs that follow.
func (e *Engine) lostOnExecutor(ctx context.Context, out LossOutcome, ended []int64) {
	e.workflowRunsEnded(ctx, ended)
	e.stats.LostOnExecutor.Add(int64(out.Lost))
	if out.FollowUp > 0 {
		e.Wake()
	}
}

// continueLost applies the job policy to executions just moved to lost, in tx: it inserts
// the runs that follow them (retries or recoveries) and makes the alarms of final losses
// pending, committed with the loss or not at all. Executions of deleted jobs are left lost.
func (e *Engine) continueLost(ctx context.Context, tx store.Tx, lost []*store.Execution, cause lossCause) (out LossOutcome, ended []int64, err error) {
	out = LossOutcome{Lost: len(lost)}
	if len(lost) == 0 {
		return out, nil, nil
	}
	jobIDs := make([]int64, len(lost))
	for i, ex := range lost {
		jobIDs[i] = ex.JobID
	}
	js, err := tx.JobsGet(ctx, jobIDs)
	if err != nil {
		return out, nil, fmt.Errorf("read the jobs of %d lost runs: %w", len(lost), err)
	}
	jobs := make(map[int64]*store.Job, len(js))
	for _, j := range js {
		jobs[j.ID] = j
	}
	now := e.clock.Now()
	var follow []*store.Execution
	var alarmed []int64
	var ends []nodeEnd
	for _, ex := range lost {
		job := jobs[ex.JobID]
		if job == nil {
			if ex.WorkflowNode != 0 {
				ends = append(ends, nodeEnd{node: ex.WorkflowNode, execution: ex.ID, message: "lost, and its job is gone"})
			}
			continue // the job is gone: nothing to re-run, nobody to tell
		}
		switch {
		case cause == lostWithNode && job.RequestsRecovery:
			follow = append(follow, e.followUp(job, ex, store.CauseRecovery, ex.ScheduledAt))
			continue
		case ex.WorkflowNode == 0 && cause == lostWithExecutor && ex.Attempt < job.MaxRetries:
			follow = append(follow, e.followUp(job, ex, store.CauseRetry, now.Add(retryBackoff(job, ex.Attempt)).UnixMilli()))
			continue
		case len(job.AlarmTargets) > 0 && (ex.WorkflowNode == 0 || cause != lostWithExecutor):
			// The loss is final (a workflow node's retries, which may differ from its job's,
			// are decided with its end below): tell the job's targets.
			alarmed = append(alarmed, ex.ID)
		}
		if ex.WorkflowNode != 0 {
			// A final loss ends the workflow node as a failure, in the loss's transaction.
			// Lost with its executor, it is retried by the node's retries (or its job's).
			ends = append(ends, nodeEnd{node: ex.WorkflowNode, execution: ex.ID, message: "lost",
				retryable: cause == lostWithExecutor, ex: ex, job: job})
		}
	}
	if len(ends) > 0 {
		if ended, err = e.advanceWorkflows(ctx, tx, ends, now); err != nil {
			return out, nil, err
		}
		out.FollowUp += len(ends) // the nodes they started
	}
	if len(alarmed) > 0 {
		if _, err := tx.ExecutionsSetAlarm(ctx, alarmed, store.AlarmNone, store.AlarmPending); err != nil {
			return out, nil, fmt.Errorf("make the alarms of %d lost runs pending: %w", len(alarmed), err)
		}
	}
	if len(follow) > 0 {
		if _, err := tx.ExecutionsInsert(ctx, follow); err != nil {
			return out, nil, fmt.Errorf("insert %d runs after lost ones: %w", len(follow), err)
		}
	}
	out.FollowUp, out.Alarmed = out.FollowUp+len(follow), len(alarmed)
	return out, ended, nil
}

// nextAttempt is the run that follows ex, pending at scheduledAt (Unix ms). A broadcast
// shard's follower is that shard again, not a new broadcast; the shard index is also part of
// the fire key, so shards followed together do not collide.
func nextAttempt(ex *store.Execution, cause store.ExecutionCause, scheduledAt int64) *store.Execution {
	return &store.Execution{JobID: ex.JobID, TriggerID: ex.TriggerID, ScheduledAt: scheduledAt,
		Cause: cause, Attempt: ex.Attempt + 1, State: store.ExecPending,
		ShardIndex: ex.ShardIndex, ShardTotal: ex.ShardTotal, Params: ex.Params, Data: ex.Data,
		IntervalStart: ex.IntervalStart, IntervalEnd: ex.IntervalEnd, BackfillID: ex.BackfillID, WorkflowNode: ex.WorkflowNode, FireZone: ex.FireZone}
}

// followUp is nextAttempt of a run of job, its params kept as the run keeps them: sealed when
// the job's params are secret. A run-now's stored before such params were sealed, or before
// the job's became secret, are in clear, and are sealed before they are copied again; without
// a key to seal them they stay as they were (the API masks them).
func (e *Engine) followUp(job *store.Job, ex *store.Execution, cause store.ExecutionCause, scheduledAt int64) *store.Execution {
	next := nextAttempt(ex, cause, scheduledAt)
	if !job.ParamsSecret || next.Params == "" || secret.Sealed(next.Params) || e.cfg.Secrets == nil {
		return next
	}
	if sealed, err := e.cfg.Secrets.Seal(next.Params); err == nil {
		next.Params = sealed
	}
	return next
}

// StateError refuses an operation because of the state of what it acts on (HTTP 409).
type StateError struct{ Msg string }

func (e *StateError) Error() string { return e.Msg }

// Retry runs an ended execution again now, as its next attempt: same job, trigger and (for a
// broadcast shard) shard. The automatic retries of a job stop at its max_retries; this one is
// asked for by a person, so it runs whatever the attempt. It returns the new execution as
// stored; a *StateError when the execution has not ended or a retry of it was created just
// now, store.ErrNotFound (wrapped) when the execution or its job does not exist.
func (e *Engine) Retry(ctx context.Context, executionID int64) (*store.Execution, error) {
	x, err := e.store.ExecutionGet(ctx, executionID)
	if err != nil {
		return nil, err
	}
	if !x.State.Terminal() {
		return nil, &StateError{fmt.Sprintf("execution %d is %s: only an ended execution can be retried", executionID, x.State)}
	}
	job, err := e.store.JobGet(ctx, x.JobID)
	if err != nil {
		return nil, fmt.Errorf("retry execution %d: job %d: %w", executionID, x.JobID, err)
	}
	retry := e.followUp(job, x, store.CauseRetry, e.clock.Now().UnixMilli())
	var dups []*store.Execution
	// In store.InTx so the caller's audit entry (store.WithAudit) commits with the retry.
	err = store.InTx(ctx, e.store, func(q store.Querier) (err error) {
		dups, err = q.ExecutionsInsert(ctx, []*store.Execution{retry})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("retry execution %d: %w", executionID, err)
	}
	if len(dups) > 0 {
		return nil, &StateError{fmt.Sprintf("execution %d: a retry for this attempt was just created; try again", executionID)}
	}
	e.Wake()
	return e.store.ExecutionGet(ctx, retry.ID)
}

// retryBackoff doubles the job's backoff with every attempt, up to maxRetryBackoff.
func retryBackoff(job *store.Job, attempt int) time.Duration {
	return backoff.Policy{Initial: msDuration(job.RetryBackoffMs), Max: maxRetryBackoff}.Delay(attempt)
}

// SweepSilentExecutors forgets the executor instances silent for longer than silence that j
// may judge (Store.RegistrySweep) and declares lost the running executions handed to their
// addresses, in one transaction: an instance is never forgotten while its runs stay running
// (a database that went away, or a node that died, between the two left them running on an
// address no registration or beat would ever judge again). Nothing is forgotten when the
// judgment does not hold once the database has answered (the sweep may have been held through
// an outage). It returns the instances forgotten and the outcome of their losses.
func (e *Engine) SweepSilentExecutors(ctx context.Context, silence time.Duration, j *Judgment) ([]*store.Instance, LossOutcome, error) {
	tx, err := e.store.Begin(ctx)
	if err != nil {
		return nil, LossOutcome{}, fmt.Errorf("sweep the executor registry: %w", err)
	}
	defer tx.Rollback()
	gone, err := tx.RegistrySweep(ctx, silence, j.From)
	if err != nil || len(gone) == 0 {
		return nil, LossOutcome{}, err
	}
	var lost []*store.Execution
	for _, in := range gone {
		got, err := tx.ExecutionsLoseOnExecutor(ctx, in.App, in.Address)
		if err != nil {
			return nil, LossOutcome{}, fmt.Errorf("lose the runs on executor %s of %s: %w", in.Address, in.App, err)
		}
		lost = append(lost, got...)
	}
	if !j.Holds() {
		e.log.Warn("not sweeping silent executors: the database judged them at a time this node may not have reached it", "instances", len(gone))
		return nil, LossOutcome{}, nil
	}
	out, ended, err := e.continueLost(ctx, tx, lost, lostWithExecutor)
	if err != nil {
		return nil, LossOutcome{}, fmt.Errorf("sweep the executor registry: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, LossOutcome{}, fmt.Errorf("sweep the executor registry: %w", err)
	}
	e.lostOnExecutor(ctx, out, ended)
	return gone, out, nil
}
