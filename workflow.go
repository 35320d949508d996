package sundial

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
)

// WorkflowInput is what the handler of a workflow node is given: the run's params and each
// parent node's result, by node name (null for a parent that returned none).
type WorkflowInput = engine.WorkflowInput

// runExtras is what a run carries beyond Execution's fields: its workflow input and the
// result its handler sets.
type runExtras struct {
	workflow *WorkflowInput
	mu       sync.Mutex
	result   json.RawMessage
}

type extrasKey struct{}

// WorkflowFrom returns the workflow input of the node a handler's context runs, or nil for a
// run outside workflows (or outside a handler).
func WorkflowFrom(ctx context.Context) *WorkflowInput {
	if x, ok := ctx.Value(extrasKey{}).(*runExtras); ok {
		return x.workflow
	}
	return nil
}

// SetResult records v, as JSON, as the run's result: a workflow node's result is given to the
// nodes that follow it. A later call replaces an earlier one; a result larger than 64 KiB
// fails the run.
func SetResult(ctx context.Context, v any) error {
	x, ok := ctx.Value(extrasKey{}).(*runExtras)
	if !ok {
		return fmt.Errorf("sundial.SetResult called outside a handler")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("the run's result: %w", err)
	}
	if len(b) > store.MaxResultBytes {
		return fmt.Errorf("the run's result is %d bytes, more than the %d allowed", len(b), store.MaxResultBytes)
	}
	x.mu.Lock()
	x.result = b
	x.mu.Unlock()
	return nil
}

// withExtras gives a handler's context its workflow input (from the fire) and a place for
// its result.
func withExtras(ctx context.Context, f *engine.Fire) (context.Context, *runExtras, error) {
	x := &runExtras{}
	if f.WorkflowInput != "" {
		x.workflow = new(WorkflowInput)
		if err := json.Unmarshal([]byte(f.WorkflowInput), x.workflow); err != nil {
			return ctx, nil, fmt.Errorf("the workflow input of execution %d: %w", f.Execution.ID, err)
		}
	}
	return context.WithValue(ctx, extrasKey{}, x), x, nil
}

func (x *runExtras) take() json.RawMessage {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.result
}
