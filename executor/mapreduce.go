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
	sc.e.mapRun.wake()
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

// mapRunner claims and runs sub-tasks and reduces ready maps for this executor.
type mapRunner struct {
	e       *Executor
	cfg     MapConfig
	wakeCh  chan struct{}
	freed   chan struct{}
	results chan api.SubtaskOutcome
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

func (r *mapRunner) wake() {
	if r == nil {
		return
	}
	select {
	case r.wakeCh <- struct{}{}:
	default:
	}
}

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
	r := e.mapRun
	r.cfg = e.cfg.Map.withDefaults()
	r.results = make(chan api.SubtaskOutcome, r.cfg.Workers)
	r.freed = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(e.baseCtx)
	r.cancel = cancel
	r.done.Add(2)
	go r.loop(ctx, names, mrs)
	go r.writer(context.WithoutCancel(ctx))
}

// stop ends the runner once the sub-tasks in flight have ended (their contexts canceled) and
// the results of those that ended on their own are reported. What is cut short is handed
// back by the unregister that follows, or when the instance goes silent.
func (r *mapRunner) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.done.Wait()
	r.cancel = nil
}

func (r *mapRunner) loop(ctx context.Context, names []string, mrs map[string]MapReduce) {
	defer r.done.Done()
	slots := make(chan struct{}, r.cfg.Workers)
	c := r.e.subtasks()
	for ctx.Err() == nil {
		free := r.cfg.Workers - len(slots)
		if free < max(r.cfg.Workers/4, 1) {
			// Busy: claim again when a quarter of the workers are free, not one by one.
			select {
			case <-ctx.Done():
			case <-r.freed:
			}
			continue
		}
		got, err := c.Claim(ctx, api.ClaimRequest{Handlers: names, Limit: min(free, r.cfg.Batch), Maps: 4})
		if err != nil {
			if ctx.Err() == nil {
				r.e.log.Warn("claim sub-tasks", "err", err)
			}
			r.sleep(ctx)
			continue
		}
		for _, st := range got.Subtasks {
			slots <- struct{}{}
			go func() {
				defer func() {
					<-slots
					select {
					case r.freed <- struct{}{}:
					default:
					}
				}()
				r.runTask(ctx, mrs[st.Handler], st)
			}()
		}
		for _, m := range got.Maps {
			r.reduce(ctx, mrs[m.Handler], m)
		}
		if len(got.Subtasks) == 0 && len(got.Maps) == 0 {
			r.sleep(ctx)
		}
	}
	for range r.cfg.Workers {
		slots <- struct{}{}
	}
	close(r.results)
}

func (r *mapRunner) sleep(ctx context.Context) {
	t := r.e.cfg.Clock.NewTimer(r.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-r.wakeCh:
	case <-t.C():
	}
}

func (r *mapRunner) runTask(ctx context.Context, mr MapReduce, st api.ClaimedSubtask) {
	sc := &mapScope{e: r.e, executionID: st.ExecutionID, parentID: st.ID, parentAttempt: st.Attempt}
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
		return // cut short by a stop: handed back and run again, not recorded as failed
	}
	res := api.SubtaskOutcome{ID: st.ID, Attempt: st.Attempt, State: "succeeded", Result: out}
	if err != nil {
		res = api.SubtaskOutcome{ID: st.ID, Attempt: st.Attempt, State: "failed", Message: truncate(err.Error(), 2000)}
	}
	r.results <- res
}

// writer reports results in batches: what finished while the last report ran goes in the next.
func (r *mapRunner) writer(ctx context.Context) {
	defer r.done.Done()
	c := r.e.subtasks()
	batch := make([]api.SubtaskOutcome, 0, r.cfg.Batch)
	for {
		res, ok := <-r.results
		if !ok {
			return
		}
		batch = append(batch[:0], res)
	gather:
		for len(batch) < min(r.cfg.Batch, 1000) {
			select {
			case res, ok := <-r.results:
				if !ok {
					break gather
				}
				batch = append(batch, res)
			default:
				break gather
			}
		}
		// A report the servers cannot take is repeated a few times; after that the attempts
		// stay running, and are run again once this instance is gone.
		for try := 0; ; try++ {
			got, err := c.Results(ctx, api.SubtaskResults{Results: batch})
			if err == nil {
				if r.cfg.Accepted != nil {
					r.cfg.Accepted(got.Accepted)
				}
				break
			}
			if permanent(err) || try == 4 {
				r.e.log.Warn("report sub-task results", "n", len(batch), "err", err)
				break
			}
			t := r.e.cfg.Clock.NewTimer(r.cfg.PollInterval)
			<-t.C()
		}
		r.wake() // the last results may have made a map ready
	}
}

// reduce runs the map's Reduce and reports the run's outcome.
func (r *mapRunner) reduce(ctx context.Context, mr MapReduce, m api.ClaimedMap) {
	started := r.e.cfg.Clock.Now()
	box := &resultBox{}
	rctx := context.WithValue(ctx, resultKey{}, box)
	res := &MapResults{c: r.e.subtasks(), ExecutionID: m.ExecutionID, Total: m.Total}
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
	if _, err := r.e.subtasks().Reduced(rc, in); err != nil {
		r.e.log.Warn("report a reduced run", "execution_id", m.ExecutionID, "err", err)
	}
}
