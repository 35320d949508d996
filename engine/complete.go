package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/internal/backoff"
	"github.com/sundial-scheduler/sundial/internal/tracing"
	"github.com/sundial-scheduler/sundial/store"
)

// completion is a finished fire waiting to be written.
type completion struct {
	fire              *Fire
	state             store.ExecutionState
	res               Result
	started, finished time.Time
	outputLost        int64 // output lines the executor could not deliver
}

// maxRetryBackoff caps the exponential retry backoff.
const maxRetryBackoff = time.Hour

// completer writes results in batches: one transaction per batch sets the terminal states
// (compare-and-set from running), stores output lines and persisted job data, and inserts
// the retries and child fires the results call for.
type completer struct {
	e    *Engine
	l    *lifecycle
	in   chan completion
	done chan struct{}
}

func newCompleter(e *Engine, l *lifecycle) *completer {
	return &completer{e: e, l: l, in: make(chan completion, 4096), done: make(chan struct{})}
}

func (c *completer) add(cp completion) { c.in <- cp }

// close flushes what is queued and waits for the writer to end.
func (c *completer) close() {
	close(c.in)
	<-c.done
}

// run writes results as they come. While one batch is being written the next accumulates,
// so under load each transaction carries many results. At a moderate rate results arrive one
// by one (handlers start at their own milliseconds), and the writer waits CompleteLinger for
// more before it writes, rather than commit once per fire.
func (c *completer) run() {
	defer close(c.done)
	for {
		cp, ok := <-c.in
		if !ok {
			return
		}
		batch := c.gather([]completion{cp})
		if linger := c.e.cfg.CompleteLinger; linger > 0 && len(batch) < c.e.cfg.CompleteBatch {
			t := c.e.clock.NewTimer(linger)
			c.e.wait(c.l.writeCtx, t, nil)
			batch = c.gather(batch)
		}
		c.flush(batch)
	}
}

// gather adds the results waiting in the queue to batch, up to CompleteBatch.
func (c *completer) gather(batch []completion) []completion {
	for len(batch) < c.e.cfg.CompleteBatch {
		select {
		case cp, ok := <-c.in:
			if !ok {
				return batch
			}
			batch = append(batch, cp)
		default:
			return batch
		}
	}
	return batch
}

// flush writes one batch, retrying a failed write with a growing pause for about a minute
// (a database restart), or until the stop's budget is spent: a result given up leaves its
// execution running, and the leader declares it lost when this node leaves.
func (c *completer) flush(batch []completion) {
	attempt := 0
	err := backoff.Retry(c.l.writeCtx, c.e.clock, writeRetry, writeAttempts, func(ctx context.Context) error {
		if c.l.abandoned.Load() {
			return backoff.Permanent(errAbandoned) // a crash writes nothing back
		}
		attempt++
		err := c.write(ctx, batch)
		if err != nil {
			c.e.log.Warn("writing results failed; retrying", "err", err, "count", len(batch), "attempt", attempt)
		}
		return err
	})
	switch {
	case errors.Is(err, errAbandoned):
	case err != nil:
		c.e.log.Error("writing results failed; giving up", "err", err, "count", len(batch))
	default:
		c.e.stats.Completed.Add(int64(len(batch)))
	}
	if c.e.cfg.tracer != nil {
		end := c.e.clock.Now()
		for _, cp := range batch {
			if cp.fire.span != nil {
				c.e.cfg.tracer.Complete(cp.fire.span, "", string(cp.state), cp.finished, end)
				tracing.End(cp.fire.span, string(cp.state), err, end)
			}
		}
	}
}

// writeRetry and writeAttempts pace the retries of a failed result write: 64 attempts over
// about a minute. The pause stays short (at most 1 s) because a result that waits is a run
// the cluster will re-run if this node dies meanwhile: once the database answers again, the
// results must be written at once, not after a long backoff.
var writeRetry = backoff.Policy{Initial: 50 * time.Millisecond, Max: time.Second, Jitter: 0.2}

const writeAttempts = 64

// storeTimeout bounds one store call that a stop does not cancel (a result write, a claim),
// so a database that stopped answering cannot hold the node.
const storeTimeout = 15 * time.Second

var errAbandoned = errors.New("node abandoned")

func (c *completer) write(ctx context.Context, batch []completion) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	_, err := c.e.writeCompletions(ctx, &c.l.owner, batch)
	return err
}

// writeCompletions writes results in one transaction and returns the ids that were still
// running (the others were recovered by the leader meanwhile, or completed already). With an
// owner, only that life's runs are completed: the results of its in-process runs. Without,
// any run is: an executor's results, which reach any node.
func (e *Engine) writeCompletions(ctx context.Context, owner *store.Owner, batch []completion) ([]int64, error) {
	results := make([]store.ExecutionResult, len(batch))
	for i, cp := range batch {
		msg := cp.res.Message
		if cp.res.Err != nil {
			if msg != "" {
				msg += ": "
			}
			msg += cp.res.Err.Error()
		}
		results[i] = store.ExecutionResult{ID: cp.fire.Execution.ID, State: cp.state, HandleCode: resultCode(cp),
			HandleMsg: msg, StartedAt: cp.started.UnixMilli(), FinishedAt: cp.finished.UnixMilli(),
			OutputLost: cp.outputLost}
		if alarms(cp.state, cp.fire.Execution, cp.fire.Job) {
			results[i].AlarmState = store.AlarmPending
		}
	}
	tx, err := e.store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var moved []int64
	if owner != nil {
		moved, err = tx.ExecutionsCompleteOwned(ctx, *owner, results)
	} else {
		moved, err = tx.ExecutionsComplete(ctx, results)
	}
	if err != nil {
		return nil, err
	}
	movedSet := idSet(moved)
	var output []store.ExecutionLines // the batch's output, stored in one statement
	var follow []*store.Execution
	var ends []nodeEnd
	var triggered []*Fire
	for _, cp := range batch {
		ex, job := cp.fire.Execution, cp.fire.Job
		if !movedSet[ex.ID] {
			continue // recovered by the leader meanwhile: it is lost, not ours to complete
		}
		if len(cp.res.Logs) > 0 {
			lines := make([]store.LogLine, len(cp.res.Logs))
			for i, msg := range cp.res.Logs {
				lines[i] = store.LogLine{Line: int64(i + 1), At: cp.finished.UnixMilli(), Message: msg}
			}
			output = append(output, store.ExecutionLines{ExecutionID: ex.ID, Lines: lines})
		}
		if job.PersistData && cp.res.Data != nil && cp.state == store.ExecSucceeded {
			if err := tx.JobSetData(ctx, job.ID, persistedData(cp.res.Data, cp.fire.jobData(), ex)); err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			e.jobs.forget(job.ID)
		}
		if err := e.pauseOnFailure(ctx, tx, cp); err != nil {
			return nil, err
		}
		switch {
		case ex.WorkflowNode == 0 && (cp.state == store.ExecFailed || cp.state == store.ExecTimedOut) && ex.Attempt < job.MaxRetries:
			follow = append(follow, e.followUp(job, ex, store.CauseRetry, cp.finished.Add(retryBackoff(job, ex.Attempt)).UnixMilli()))
		case ex.WorkflowNode != 0 && cp.state == store.ExecCanceled && (errors.Is(cp.res.Err, errStopping) || errors.Is(cp.res.Err, errNotAlive)):
			// A scheduler node that stopped (or could not confirm it lives) before its handler
			// began: no handler ran, so the workflow node is not failed but run again, on
			// whichever node takes it.
			follow = append(follow, e.followUp(job, ex, store.CauseRecovery, ex.ScheduledAt))
		case ex.WorkflowNode != 0:
			// The node's end: its run advances (or the node is retried by its own retries, or its
			// job's) in this transaction. The flag on the execution is all the path tests, so
			// runs outside workflows cost nothing more.
			ends = append(ends, workflowEnd(cp))
		}
		if cp.state == store.ExecSucceeded && job.Handler == WorkflowHandler {
			triggered = append(triggered, cp.fire)
		}
		if cp.state == store.ExecSucceeded {
			for _, child := range job.ChildJobIDs {
				follow = append(follow, &store.Execution{JobID: child, ScheduledAt: cp.finished.UnixMilli(),
					Cause: store.CauseChild, State: store.ExecPending})
			}
		}
	}
	if len(output) > 0 {
		if _, err := tx.ExecutionLogsAppend(ctx, output); err != nil {
			return nil, err
		}
	}
	if len(follow) > 0 {
		if _, err := tx.ExecutionsInsert(ctx, follow); err != nil {
			return nil, err
		}
	}
	var ended []int64
	var starts []started
	if len(ends) > 0 {
		if ended, err = e.advanceWorkflows(ctx, tx, ends, e.clock.Now()); err != nil {
			return nil, err
		}
	}
	if len(triggered) > 0 {
		if starts, err = e.startTriggered(ctx, tx, triggered, e.clock.Now()); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	if len(ends) > 0 || len(triggered) > 0 {
		e.workflowRunsEnded(ctx, ended)
		e.afterStart(ctx, starts)
		e.Wake() // the nodes the workflows started
	}
	for _, id := range moved {
		e.signals.executionCompleted(id)
	}
	if len(follow) > 0 {
		e.Wake()
	}
	return moved, nil
}

// pausedByFailures is who a job paused by pause on failure names as its pauser.
const pausedByFailures = store.PausedByFailures

// pauseOnFailure counts a final result of a job with pause on failure, in the transaction
// that writes it: a success resets the count of failures in a row, a final failure (its
// retries spent) adds one, and the one that reaches the job's limit pauses the job's
// triggers with a note saying why. Counted in the database, the limit holds whichever nodes
// and executors report the failures, and only one result reaches it.
func (e *Engine) pauseOnFailure(ctx context.Context, tx store.Tx, cp completion) error {
	ex, job := cp.fire.Execution, cp.fire.Job
	failed := (cp.state == store.ExecFailed || cp.state == store.ExecTimedOut) && ex.Attempt >= job.MaxRetries
	if job.PauseAfterFailures <= 0 || !failed && cp.state != store.ExecSucceeded {
		return nil
	}
	n, err := tx.JobCountResult(ctx, job.ID, failed)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil || !failed || n != job.PauseAfterFailures {
		return err
	}
	if _, err := tx.TriggersPause(ctx, store.TriggerSelector{JobID: job.ID}); err != nil {
		return err
	}
	note := fmt.Sprintf("paused after %d failures in a row (pause on failure); the last was execution %d", n, ex.ID)
	e.log.Warn("job paused on failure", "job", job.ID, "failures", n, "execution", ex.ID)
	// Paused at the failure's own finish: its alarm, pending in this transaction, is then
	// told as the pause (package alarm, event job.paused).
	return tx.JobSetPause(ctx, job.ID, pausedByFailures, note, cp.finished.UnixMilli())
}

// RemoteResult is the outcome of a fire that ran elsewhere (on an executor), reported to any
// node.
type RemoteResult struct {
	ExecutionID       int64
	State             store.ExecutionState // succeeded, failed, timed_out or canceled
	Code              int
	Message           string
	Started, Finished time.Time
	Data              map[string]any
	Logs              []string
	// Traceparent is the run's W3C trace context, from the executor ("" for none).
	Traceparent string
	// OutputLost counts the run's output lines the executor could not deliver.
	OutputLost int64
	// Return is the run's JSON result (see Result.Return).
	Return json.RawMessage
}

// CompleteRemote records results of fires whose Dispatch returned Async: the execution moves
// from running to its final state (compare-and-set, so a result that arrives twice, or for a
// fire the leader declared lost, changes nothing) and retries and child fires follow as for
// in-process fires. Results for executions that do not exist are ignored. A result for an
// execution already declared lost is recorded as a late result (see completeLate). It returns
// the ids it completed or recorded late.
func (e *Engine) CompleteRemote(ctx context.Context, results []RemoteResult) ([]int64, error) {
	ids := make([]int64, len(results))
	for i, r := range results {
		switch r.State {
		case store.ExecSucceeded, store.ExecFailed, store.ExecTimedOut, store.ExecCanceled:
		default:
			return nil, fmt.Errorf("execution %d: state %q is not a final state", r.ExecutionID, r.State)
		}
		ids[i] = r.ExecutionID
	}
	xs, err := e.store.ExecutionsGet(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read %d executions: %w", len(ids), err)
	}
	byID := make(map[int64]*store.Execution, len(xs))
	for _, x := range xs {
		byID[x.ID] = x
	}
	batch := make([]completion, 0, len(results))
	var jobIDs []int64
	for _, r := range results {
		ex := byID[r.ExecutionID]
		if ex == nil {
			continue // gone (retention, a deleted job): nothing to complete, and no reason to fail the rest
		}
		res := Result{Code: r.Code, Message: r.Message, Data: r.Data, Logs: r.Logs, Return: r.Return}
		state := r.State
		if err := checkResult(r.Return); err != nil && state == store.ExecSucceeded {
			state, res.Err, res.Return = store.ExecFailed, err, nil
		}
		batch = append(batch, completion{fire: &Fire{Execution: ex}, state: state, res: res, started: r.Started, finished: r.Finished,
			outputLost: r.OutputLost})
		jobIDs = append(jobIDs, ex.JobID)
	}
	jobs, err := e.jobs.getMany(ctx, jobIDs)
	if err != nil {
		return nil, err
	}
	for i := range batch {
		job := jobs[batch[i].fire.Execution.JobID]
		if job == nil {
			job = &store.Job{ID: batch[i].fire.Execution.JobID} // deleted: no retries, no children
		}
		batch[i].fire.Job = job
	}
	start := e.clock.Now()
	done, err := e.writeCompletions(ctx, nil, batch)
	if err != nil {
		return nil, err
	}
	if e.cfg.tracer != nil {
		// The results this call wrote (a repeated one changed nothing) join their fire's trace.
		end, wrote := e.clock.Now(), idSet(done)
		for _, r := range results {
			if wrote[r.ExecutionID] {
				e.cfg.tracer.Complete(nil, r.Traceparent, string(r.State), start, end)
			}
		}
	}
	late, err := e.completeLate(ctx, batch, done)
	return append(done, late...), err
}

// resultCode is the handle code of a result: its own, or 200 for a success (or skip) and 500
// for anything else when it has none.
func resultCode(cp completion) int {
	switch {
	case cp.res.Code != 0:
		return cp.res.Code
	case cp.state == store.ExecSucceeded || cp.state == store.ExecSkipped:
		return 200
	}
	return 500
}

// alarms reports whether a result is a final failure its job wants to be told about: one
// with no retry left, so a retried job alarms once, after its last attempt (XXL-JOB alarms
// every attempt). The pending alarm is written with the result, in its transaction.
//
// A success goes to the alarm sender too when the job's alarm policy counts failures in a
// row (a success resets the count) or tells of a recovery: the sender decides (package
// alarm's Step) and most such alarms end told to nobody.
func alarms(state store.ExecutionState, ex *store.Execution, job *store.Job) bool {
	if len(job.AlarmTargets) == 0 {
		return false
	}
	if state == store.ExecSucceeded {
		p := job.AlarmPolicy
		return p.Recovery || (p.Threshold > 1 && p.WindowMs == 0)
	}
	return (state == store.ExecFailed || state == store.ExecTimedOut) && ex.Attempt >= job.MaxRetries
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// workflowEnd is a workflow node's final result: a success whose result is not JSON, or too
// large, fails the node.
func workflowEnd(cp completion) nodeEnd {
	end := nodeEnd{node: cp.fire.Execution.WorkflowNode, execution: cp.fire.Execution.ID, succeeded: cp.state == store.ExecSucceeded,
		message: cp.res.Message, retryable: cp.state == store.ExecFailed || cp.state == store.ExecTimedOut,
		canceled: cp.state == store.ExecCanceled, ex: cp.fire.Execution, job: cp.fire.Job}
	if cp.res.Err != nil {
		end.message = cp.res.Err.Error()
	}
	if err := checkResult(cp.res.Return); err != nil {
		end.succeeded, end.message = false, err.Error()
	} else {
		end.result = string(cp.res.Return)
	}
	if !end.succeeded && end.message == "" {
		end.message = string(cp.state)
	}
	return end
}
