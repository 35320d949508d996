package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

// ExecutorSubtaskOwner names an executor instance as the owner of the sub-tasks it claimed
// (node lives are "node/incarnation"; instance ids are hex, so the two never meet).
func ExecutorSubtaskOwner(instance string) string { return "executor:" + instance }

// CheckSubtaskResult says why a sub-task's result may not be stored (nil when it may): the
// rule of a run's result, so a task's result and a run's are bounded alike.
func CheckSubtaskResult(r json.RawMessage) error { return checkResult(r) }

// CompleteReduce records the outcome of a map's Reduce, by the runner that claimed the map
// (owner, a node's life or an executor instance): the execution completes as a remote result
// does (retries and child fires follow), and the map is done. A map not reducing by owner
// (its runner was declared dead and another claimed it) is store.ErrConflict and changes
// nothing. It reports whether the execution completed (false when it had ended already).
func (e *Engine) CompleteReduce(ctx context.Context, owner string, r RemoteResult) (bool, error) {
	m, err := e.store.SubtaskMapGet(ctx, r.ExecutionID)
	if err != nil {
		return false, err
	}
	if m.State != store.MapReducing || m.Owner != owner {
		return false, fmt.Errorf("map of execution %d is %s by %q, not reducing by %q: %w", r.ExecutionID, m.State, m.Owner, owner, store.ErrConflict)
	}
	done, err := e.CompleteRemote(ctx, []RemoteResult{r})
	if err != nil {
		return false, fmt.Errorf("complete reduced execution %d: %w", r.ExecutionID, err)
	}
	if _, err := e.store.SubtaskMapEnd(ctx, r.ExecutionID, owner); err != nil {
		return len(done) > 0, fmt.Errorf("end the map of execution %d: %w", r.ExecutionID, err)
	}
	return len(done) > 0, nil
}
