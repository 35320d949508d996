package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// The liveness of runs handed to executors. An executor's heartbeat names the process
// (its instance) and the runs it holds: those it runs or queues and those whose result it has
// not delivered yet. A run the executor holds is never declared lost, whichever node handed
// it over; a run on its address that it does not hold is lost at once when another instance
// (the executor before a restart) had it, and otherwise once it has gone unreported for
// longer than a grace (a /run in flight is not held yet).

// ExecutorBeat is what an executor's heartbeat says about its runs.
type ExecutorBeat struct {
	App, Address string
	// Instance is the executor process; "" (an executor that does not say) checks nothing.
	Instance string
	// Held are the executions the instance runs, queues or has a result for not yet delivered.
	Held []int64
}

// CheckExecutorBeat declares lost the runs on the beat's address that the executor no longer
// holds (see the top of this file), with the job policy of LoseOnExecutor; grace is how long
// a run handed to the same instance may go unreported.
func (e *Engine) CheckExecutorBeat(ctx context.Context, b ExecutorBeat, grace time.Duration) (LossOutcome, error) {
	if b.Instance == "" {
		return LossOutcome{}, nil
	}
	runs, err := e.store.ExecutionsRunningOnExecutor(ctx, b.App, b.Address)
	if err != nil {
		return LossOutcome{}, err
	}
	since := int64(0)
	if slices.ContainsFunc(runs, func(r store.ExecutorRun) bool { return r.Instance != "" && r.Instance != b.Instance }) {
		if since, err = e.instanceSince(ctx, b); err != nil {
			return LossOutcome{}, err
		}
	}
	gone := unheld(runs, b, since, e.clock.Now().Add(-grace).UnixMilli())
	if len(gone) == 0 {
		return LossOutcome{}, nil
	}
	return e.loseOnExecutor(ctx, b.App, b.Address, func(tx store.Tx) ([]*store.Execution, error) {
		return tx.ExecutionsLoseOnExecutorIDs(ctx, b.Address, gone)
	})
}

// instanceSince reads when the beat's instance took its address (by the database clock).
func (e *Engine) instanceSince(ctx context.Context, b ExecutorBeat) (int64, error) {
	live, err := e.store.RegistryLive(ctx, b.App, 24*time.Hour)
	if err != nil {
		return 0, err
	}
	for _, in := range live {
		if in.Address == b.Address && in.Instance == b.Instance {
			return in.RegisteredAt, nil
		}
	}
	return 0, nil // gone meanwhile: nothing is told apart by its time
}

// unheld picks the runs the beat's executor does not hold and that are not its to report:
// handed to another instance (that process is gone) which accepted it or was sent it before
// this one took the address (since), or fired and dispatched before firedBefore. A run
// recorded for another instance, not accepted, from the time this one came (by the
// database's millisecond clock) may have been sent with an instance read a moment too early:
// this executor refuses it and the dispatcher records it again for this one, so it waits
// like a run in flight.
func unheld(runs []store.ExecutorRun, b ExecutorBeat, since, firedBefore int64) []store.ExecutorRun {
	held := make(map[int64]bool, len(b.Held))
	for _, id := range b.Held {
		held[id] = true
	}
	var out []store.ExecutorRun
	for _, r := range runs {
		if held[r.ID] {
			continue
		}
		// The grace runs from the dispatch, which may come long after the fire (a database
		// that did not answer meanwhile): its /run may still be in flight.
		earlier := r.Instance != "" && r.Instance != b.Instance && (r.Accepted || r.DispatchedAt < since)
		if earlier || max(r.FiredAt, r.DispatchedAt) < firedBefore {
			out = append(out, r)
		}
	}
	return out
}

// LateSuffix ends the handle message of a result that arrived after its run was declared
// lost.
const LateSuffix = " (arrived late: the run had been declared lost)"

// completeLate records the results of batch that writeCompletions did not apply because their
// execution had been declared lost: the execution shows the real outcome, its message ends
// with LateSuffix, and nothing follows from it — the loss already scheduled the job's retry
// (which may have run by now, and is not undone) or made its alarm pending, so a late result
// adds no retry, child fire or alarm. It returns the ids it recorded.
func (e *Engine) completeLate(ctx context.Context, batch []completion, done []int64) ([]int64, error) {
	var late []store.ExecutionResult
	for _, cp := range batch {
		ex := cp.fire.Execution
		if slices.Contains(done, ex.ID) || (ex.State != store.ExecLost && ex.State != store.ExecRunning) {
			continue // completed now, or ended otherwise before: a result reported twice
		}
		msg := strings.TrimSuffix(cp.res.Message, LateSuffix) + LateSuffix
		late = append(late, store.ExecutionResult{ID: ex.ID, State: cp.state, HandleCode: resultCode(cp),
			HandleMsg: msg, StartedAt: cp.started.UnixMilli(), FinishedAt: cp.finished.UnixMilli(), OutputLost: cp.outputLost})
	}
	if len(late) == 0 {
		return nil, nil
	}
	ids, err := e.store.ExecutionsCompleteLate(ctx, late)
	if err != nil {
		return nil, fmt.Errorf("record %d late results: %w", len(late), err)
	}
	if len(ids) > 0 {
		e.stats.LateResults.Add(int64(len(ids)))
		e.log.Warn("results arrived for runs declared lost; recorded them late", "executions", ids)
	}
	return ids, nil
}
