package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/maprun"
)

// MapReduce is a handler that splits its run into sub-tasks at run time, as
// sundial.MapReduce does in process. Start runs the fire like a Handler and calls Map with
// the sub-tasks' payloads; the run then waits, holding no slot of this executor, while the
// sub-tasks run on every executor of the app that registered the handler (each claimed by one
// instance at a time, with up to the job's max_retries retries), and when all have ended
// Reduce runs once, on one of them, with every result. The run ends with Reduce's outcome
// (its result is what Reduce passes to SetResult). A Start that does not call Map ends the
// run as an ordinary handler does.
type MapReduce struct {
	Start Handler
	// Task runs one sub-task and returns its result (JSON, up to 64 KiB; nil for none). It may
	// call Map to split further, up to the server's depth limit.
	Task func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error)
	// Reduce is given the results of all the run's sub-tasks, those that failed too.
	Reduce func(ctx context.Context, results *MapResults) error
}

// MapConfig tunes the sub-task runner of an executor (Config.Map).
type MapConfig struct {
	// Workers is how many sub-tasks run at once. Default 64.
	Workers int
	// Batch is how many sub-tasks one claim takes, and one report carries. Default 500.
	Batch int
	// PollInterval is how often an idle executor asks for sub-tasks and maps to reduce.
	// Default 500 ms.
	PollInterval time.Duration
	// Accepted, when set, is called after each report of results with the sub-task ids the
	// server accepted (an attempt is accepted once; for ledgers and metrics).
	Accepted func(ids []int64)
}

func (c MapConfig) withDefaults() MapConfig {
	if c.Workers <= 0 {
		c.Workers = 64
	}
	if c.Batch <= 0 {
		c.Batch = 500
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 500 * time.Millisecond
	}
	return c
}

// ErrMapLimit is returned by Map past the server's depth or size limit (the server's
// sundial.MapConfig MaxDepth and MaxSubtasks); nothing was stored.
var ErrMapLimit = errors.New("map limit")

// Subtask is what a Task's context carries: SubtaskFrom returns it.
type Subtask struct {
	ID          int64
	ExecutionID int64
	ParentID    int64 // the sub-task that mapped it; 0 for the run's Start
	Depth       int
	Attempt     int // from 1
}

type subtaskKey struct{}

// SubtaskFrom returns the sub-task a Task's context runs, or nil elsewhere.
func SubtaskFrom(ctx context.Context) *Subtask {
	st, _ := ctx.Value(subtaskKey{}).(*Subtask)
	return st
}

// SubtaskResult is one sub-task as Reduce sees it.
type SubtaskResult struct {
	ID       int64
	ParentID int64
	Depth    int
	Seq      int
	Payload  json.RawMessage
	// Failed is true for a sub-task whose last attempt failed; Message says why.
	Failed  bool
	Message string
	Result  json.RawMessage
}

// MapResults pages through a run's sub-task results from the server, in the order they were
// mapped (by id), so a map of any size is reduced without holding it whole.
type MapResults struct {
	c api.SubtaskClient
	// ExecutionID is the run being reduced; Total counts its sub-tasks at every depth.
	ExecutionID int64
	Total       int64
}

// Each calls fn with every result in turn and stops at its first error.
func (r *MapResults) Each(ctx context.Context, fn func(SubtaskResult) error) error {
	var after int64
	for {
		page, err := r.c.List(ctx, api.SubtaskListRequest{ExecutionID: r.ExecutionID, AfterID: after, Limit: 1000})
		if err != nil {
			return fmt.Errorf("read the sub-tasks of execution %d: %w", r.ExecutionID, err)
		}
		for _, st := range page {
			res := SubtaskResult{ID: st.ID, ParentID: st.ParentID, Depth: st.Depth, Seq: st.Seq, Payload: st.Payload,
				Failed: st.State != "succeeded", Message: st.Message, Result: st.Result}
			if err := fn(res); err != nil {
				return err
			}
		}
		if len(page) < 1000 {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// mapScope is where a Map call in a handler's context puts its sub-tasks.
type mapScope struct {
	e             *Executor
	executionID   int64
	parentID      int64
	parentAttempt int
	mu            sync.Mutex
	next          int // seq of the next payload: a repeated run maps the same keys
	mapped        bool
}

type mapScopeKey struct{}

// Map adds sub-tasks with the payloads to the run of a MapReduce handler (called from its
// Start or, to split further, from its Task). They are stored by the server before Map
// returns. A run of the same Start or Task again (a retry, or a recovery) maps the same
// payloads to the same sub-tasks, which are not added twice. Past the server's limits it
// stores nothing and returns an error that wraps ErrMapLimit.
func Map(ctx context.Context, payloads []json.RawMessage) error {
	sc, ok := ctx.Value(mapScopeKey{}).(*mapScope)
	if !ok {
		return errors.New("executor.Map called outside the Start or Task of a MapReduce handler")
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	_, err := sc.e.subtasks().Map(ctx, api.MapRequest{ExecutionID: sc.executionID, ParentID: sc.parentID,
		ParentAttempt: sc.parentAttempt, Seq: sc.next, Payloads: payloads})
	if err != nil {
		var se *wire.StatusError
		if errors.As(err, &se) && se.Status == http.StatusConflict {
			var body api.ErrorBody
			if json.Unmarshal([]byte(se.Body), &body) == nil && body.Error.Code == api.CodeMapLimit {
				return fmt.Errorf("%w: %s", ErrMapLimit, body.Error.Message)
			}
		}
		return fmt.Errorf("map %d sub-tasks of execution %d: %w", len(payloads), sc.executionID, err)
	}
	sc.next += len(payloads)
	sc.mapped = true
	sc.e.mapRun.Wake()
	return nil
}

// HandleMapReduce registers mr under name (see MapReduce). Register it before Start.
func (e *Executor) HandleMapReduce(name string, mr MapReduce) {
	if name == "" || mr.Start == nil || mr.Task == nil || mr.Reduce == nil {
		panic("executor: HandleMapReduce needs a name, Start, Task and Reduce")
	}
	e.mu.Lock()
	e.mapReduces[name] = mr
	e.mu.Unlock()
	e.Handle(name, func(ctx context.Context) error {
		run, _ := RunFrom(ctx)
		sc := &mapScope{e: e, executionID: run.ExecutionID}
		err := mr.Start(context.WithValue(ctx, mapScopeKey{}, sc))
		if err == nil && sc.mapped {
			// The run waits for its sub-tasks: whoever reduces its map reports it.
			if box, ok := ctx.Value(resultKey{}).(*resultBox); ok {
				box.setMapped()
			}
		}
		return err
	})
}

// subtasks is the typed client of the map/reduce calls, sent as every call of this executor.
func (e *Executor) subtasks() api.SubtaskClient { return api.SubtaskClient{C: poster{e}} }

type poster struct{ e *Executor }

func (p poster) Post(ctx context.Context, path string, in, out any) error {
	return p.e.post(ctx, path, in, out)
}

// mapRunner claims and runs sub-tasks and reduces ready maps for this executor (the loop is
// internal/maprun's, shared with the in-process runner).
type mapRunner = maprun.Runner[api.ClaimedSubtask, api.SubtaskOutcome, api.ClaimedMap]

func (e *Executor) startMapRunner() {
	e.mu.Lock()
	names := make([]string, 0, len(e.mapReduces))
	mrs := make(map[string]MapReduce, len(e.mapReduces))
	for n, mr := range e.mapReduces {
		names = append(names, n)
		mrs[n] = mr
	}
	e.mu.Unlock()
	if len(names) == 0 {
		return
	}
	cfg := e.cfg.Map.withDefaults()
	r, c := e.mapRun, e.subtasks()
	r.Workers, r.Batch, r.PollInterval, r.Clock = cfg.Workers, min(cfg.Batch, 1000), cfg.PollInterval, e.cfg.Clock
	r.Claim = func(ctx context.Context, n int) ([]api.ClaimedSubtask, []api.ClaimedMap, bool) {
		got, err := c.Claim(ctx, api.ClaimRequest{Handlers: names, Limit: n, Maps: 4})
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("claim sub-tasks", "err", err)
			}
			return nil, nil, false
		}
		return got.Subtasks, got.Maps, true
	}
	r.Run = func(ctx context.Context, st api.ClaimedSubtask) (api.SubtaskOutcome, bool) {
		return e.runTask(ctx, mrs[st.Handler], st)
	}
	r.Write = func(ctx context.Context, rs []api.SubtaskOutcome) { e.reportSubtasks(ctx, cfg, rs) }
	r.Reduce = func(ctx context.Context, m api.ClaimedMap) { e.reduce(ctx, mrs[m.Handler], m) }
	r.Start(e.baseCtx)
}

func (e *Executor) runTask(ctx context.Context, mr MapReduce, st api.ClaimedSubtask) (api.SubtaskOutcome, bool) {
	sc := &mapScope{e: e, executionID: st.ExecutionID, parentID: st.ID, parentAttempt: st.Attempt}
	tctx := context.WithValue(ctx, mapScopeKey{}, sc)
	tctx = context.WithValue(tctx, subtaskKey{}, &Subtask{ID: st.ID, ExecutionID: st.ExecutionID, ParentID: st.ParentID, Depth: st.Depth, Attempt: st.Attempt})
	out, err := func() (out json.RawMessage, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		if mr.Task == nil {
			return nil, fmt.Errorf("no map/reduce handler %q on this executor", st.Handler)
		}
		return mr.Task(tctx, st.Payload)
	}()
	if err != nil && ctx.Err() != nil {
		return api.SubtaskOutcome{}, false // cut short by a stop: handed back and run again, not recorded as failed
	}
	if err != nil {
		return api.SubtaskOutcome{ID: st.ID, Attempt: st.Attempt, State: "failed", Message: truncate(err.Error(), 2000)}, true
	}
	return api.SubtaskOutcome{ID: st.ID, Attempt: st.Attempt, State: "succeeded", Result: out}, true
}

// reportSubtasks reports a batch of outcomes. A report the servers cannot take is repeated a
// few times; after that the attempts stay running, and are run again once this instance is
// gone.
func (e *Executor) reportSubtasks(ctx context.Context, cfg MapConfig, batch []api.SubtaskOutcome) {
	for try := 0; ; try++ {
		got, err := e.subtasks().Results(ctx, api.SubtaskResults{Results: batch})
		if err == nil {
			if cfg.Accepted != nil {
				cfg.Accepted(got.Accepted)
			}
			return
		}
		if permanent(err) || try == 4 {
			e.log.Warn("report sub-task results", "n", len(batch), "err", err)
			return
		}
		t := e.cfg.Clock.NewTimer(cfg.PollInterval)
		<-t.C()
	}
}

// reduce runs the map's Reduce and reports the run's outcome.
func (e *Executor) reduce(ctx context.Context, mr MapReduce, m api.ClaimedMap) {
	started := e.cfg.Clock.Now()
	box := &resultBox{}
	rctx := context.WithValue(ctx, resultKey{}, box)
	res := &MapResults{c: e.subtasks(), ExecutionID: m.ExecutionID, Total: m.Total}
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic in reduce: %v", p)
			}
		}()
		if mr.Reduce == nil {
			return fmt.Errorf("no map/reduce handler %q on this executor", m.Handler)
		}
		return mr.Reduce(rctx, res)
	}()
	if err != nil && ctx.Err() != nil {
		return // cut short by a stop: the map is handed back and reduced elsewhere
	}
	in := api.ReducedRequest{ExecutionID: m.ExecutionID, State: "succeeded", StartedAt: started.UnixMilli(), Result: box.take()}
	if err != nil {
		in.State, in.Message, in.Result = "failed", truncate(err.Error(), 16<<10), nil
	}
	// A reduce that ended is reported even when the executor is stopping meanwhile.
	rc, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := e.subtasks().Reduced(rc, in); err != nil {
		e.log.Warn("report a reduced run", "execution_id", m.ExecutionID, "err", err)
	}
}
