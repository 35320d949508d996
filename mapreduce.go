package sundial

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/maprun"
	"github.com/sundial-scheduler/sundial/store"
)

// MapReduce is a handler that splits its run into sub-tasks at run time. Start runs the
// fire like a Handler and calls Map with the sub-tasks' payloads; its run then waits, holding
// no worker, while the sub-tasks run on every node that registered the handler (each claimed
// by one node at a time, with up to the job's MaxRetries retries), and when all have ended
// Reduce runs once, on one node, with every result. The run ends with Reduce's outcome. A
// Start that does not call Map ends the run as an ordinary handler does.
type MapReduce struct {
	Start Handler
	// Task runs one sub-task and returns its result (JSON, up to 64 KiB; nil for none). It may
	// call Map to split further, up to MapConfig.MaxDepth levels.
	Task func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error)
	// Reduce is given the results of all the run's sub-tasks, those that failed too.
	Reduce func(ctx context.Context, results *MapResults) error
}

// MapConfig tunes the sub-task runner of a node.
type MapConfig struct {
	// Workers is how many sub-tasks run at once on the node. Default 64.
	Workers int
	// Batch is how many sub-tasks one claim takes, and one result write records. Default 500.
	Batch int
	// PollInterval is how often an idle node looks for sub-tasks and maps ready to reduce
	// that other nodes made. Default 500 ms.
	PollInterval time.Duration
	// MaxDepth is how deep sub-tasks may map further (1: only Start maps). Default 3.
	MaxDepth int
	// MaxSubtasks bounds the sub-tasks of one run, at every depth. Default 1,000,000.
	MaxSubtasks int64
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
	if c.MaxDepth <= 0 {
		c.MaxDepth = 3
	}
	if c.MaxSubtasks <= 0 {
		c.MaxSubtasks = 1_000_000
	}
	return c
}

// ErrMapLimit is returned by Map past MapConfig.MaxDepth or MaxSubtasks.
var ErrMapLimit = errors.New("map limit")

// Subtask is what a sub-task's context carries: SubtaskFrom returns it.
type Subtask struct {
	ID          int64
	ExecutionID int64
	ParentID    int64 // the sub-task that mapped it; 0 for the run's Start
	Depth       int
	Attempt     int // from 1
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

// MapResults pages through a run's sub-task results, in the order they were mapped (by id),
// so a map of any size is reduced without holding it whole.
type MapResults struct {
	q store.Querier
	// ExecutionID is the run being reduced; Total counts its sub-tasks at every depth.
	ExecutionID int64
	Total       int64
}

// Each calls fn with every result in turn and stops at its first error.
func (r *MapResults) Each(ctx context.Context, fn func(SubtaskResult) error) error {
	var after int64
	for {
		page, err := r.q.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: r.ExecutionID, AfterID: after, Limit: 1000})
		if err != nil {
			return err
		}
		for _, st := range page {
			res := SubtaskResult{ID: st.ID, ParentID: st.ParentID, Depth: st.Depth, Seq: st.Seq, Payload: json.RawMessage(st.Payload),
				Failed: st.State != store.SubtaskSucceeded, Message: st.Message}
			if st.Result != "" {
				res.Result = json.RawMessage(st.Result)
			}
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
	s           *Scheduler
	executionID int64
	jobID       int64
	handler     string
	parentID    int64
	depth       int // of the sub-tasks this scope maps
	maxAttempts int
	mu          sync.Mutex
	next        int // seq of the next payload: a repeated run maps the same keys
	mapped      bool
}

type mapScopeKey struct{}

// SubtaskFrom returns the sub-task a Task's context runs, or nil elsewhere.
func SubtaskFrom(ctx context.Context) *Subtask {
	st, _ := ctx.Value(subtaskKey{}).(*Subtask)
	return st
}

type subtaskKey struct{}

// Map adds sub-tasks with the payloads to the run of a MapReduce handler (called from its
// Start or, to split further, from its Task). They are stored, in batched statements, before
// Map returns. A run of the same Start or Task again (a retry, or a recovery) maps the same
// payloads to the same sub-tasks, which are not added twice. Past MapConfig.MaxDepth or
// MaxSubtasks it stores nothing and returns an error that wraps ErrMapLimit.
func Map(ctx context.Context, payloads []json.RawMessage) error {
	sc, ok := ctx.Value(mapScopeKey{}).(*mapScope)
	if !ok {
		return fmt.Errorf("sundial.Map called outside the Start or Task of a MapReduce handler")
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if _, err := sc.s.MapSubtasks(ctx, MapRequest{ExecutionID: sc.executionID, JobID: sc.jobID, Handler: sc.handler,
		ParentID: sc.parentID, Depth: sc.depth, Seq: sc.next, MaxAttempts: sc.maxAttempts, Payloads: payloads}); err != nil {
		return err
	}
	sc.next += len(payloads)
	sc.mapped = true
	sc.s.mapRun.wake()
	return nil
}

// MapRequest is one Map call: payloads mapped by the Start (ParentID 0, Depth 1) or a Task
// (ParentID its sub-task, Depth one below it) of ExecutionID, numbered from Seq.
type MapRequest struct {
	ExecutionID, JobID int64
	// Handler is the key runners claim the sub-tasks by: the job's handler in process, the
	// app-scoped key of a remote handler (server).
	Handler     string
	ParentID    int64
	Depth       int
	Seq         int
	MaxAttempts int
	Payloads    []json.RawMessage
}

// MapSubtasks stores the sub-tasks of one Map call under this node's MapConfig limits (past
// them nothing is stored and the error wraps ErrMapLimit): the rule of Map, whether the call
// came from a handler in process or from an executor (server). It returns how many it added.
func (s *Scheduler) MapSubtasks(ctx context.Context, r MapRequest) (int, error) {
	cfg := s.mapCfg
	if r.Depth > cfg.MaxDepth {
		return 0, fmt.Errorf("execution %d: sub-task %d at depth %d may not map further (MaxDepth %d): %w",
			r.ExecutionID, r.ParentID, r.Depth-1, cfg.MaxDepth, ErrMapLimit)
	}
	ts := make([]*store.Subtask, len(r.Payloads))
	for i, p := range r.Payloads {
		if !json.Valid(p) {
			return 0, fmt.Errorf("payload %d is not JSON", i)
		}
		ts[i] = &store.Subtask{ParentID: r.ParentID, Depth: r.Depth, Seq: r.Seq + i, Payload: string(p), MaxAttempts: r.MaxAttempts}
	}
	m := &store.SubtaskMap{ExecutionID: r.ExecutionID, JobID: r.JobID, Handler: r.Handler}
	n, err := s.store.SubtasksMap(ctx, m, ts, cfg.MaxSubtasks)
	if errors.Is(err, store.ErrLimit) {
		return 0, fmt.Errorf("%w: %w", ErrMapLimit, err)
	}
	return n, err
}

// RegisterMapReduce makes mr the handler of jobs whose Handler is name (see MapReduce).
func (s *Scheduler) RegisterMapReduce(name string, mr MapReduce) {
	s.mu.Lock()
	s.mapReduces[name] = mr
	s.mu.Unlock()
	s.Register(name, func(ctx context.Context) error { return mr.Start(ctx) })
}

// withMapScope gives a Start's context its place to map, when the handler is a MapReduce.
func (s *Scheduler) withMapScope(ctx context.Context, f *engine.Fire) (context.Context, *mapScope) {
	s.mu.RLock()
	_, ok := s.mapReduces[f.Job.Handler]
	s.mu.RUnlock()
	if !ok {
		return ctx, nil
	}
	sc := &mapScope{s: s, executionID: f.Execution.ID, jobID: f.Job.ID, handler: f.Job.Handler, depth: 1, maxAttempts: f.Job.MaxRetries + 1}
	return context.WithValue(ctx, mapScopeKey{}, sc), sc
}

// mapRunner claims and runs sub-tasks and reduces ready maps on one node (the loop is
// internal/maprun's, shared with the executor SDK's runner). Claims, results and reduces each
// go to the database in batches: one claim takes Batch sub-tasks, one write records the
// results that finished meanwhile.
type mapRunner struct {
	s   *Scheduler
	log *slog.Logger
	run maprun.Runner[ownedTask, store.SubtaskResult, ownedMap]
}

// ownedTask and ownedMap are claims with the life that made them.
type ownedTask struct {
	owner string
	st    *store.Subtask
}

type ownedMap struct {
	owner string
	m     *store.SubtaskMap
}

func (r *mapRunner) wake() {
	if r == nil {
		return
	}
	r.run.Wake()
}

func (s *Scheduler) startMapRunner() {
	s.mu.RLock()
	n := len(s.mapReduces)
	s.mu.RUnlock()
	if n == 0 {
		return
	}
	r, cfg := s.mapRun, s.mapCfg
	names, mrs := r.handlers()
	r.run.Workers, r.run.Batch, r.run.PollInterval, r.run.Clock = cfg.Workers, cfg.Batch, cfg.PollInterval, s.clock
	r.run.Claim = func(ctx context.Context, n int) ([]ownedTask, []ownedMap, bool) {
		owner, ok := s.engine.SubtaskOwner()
		if !ok {
			return nil, nil, false
		}
		ts, err := s.store.SubtasksClaim(ctx, owner, names, n)
		if err != nil {
			r.log.Warn("claim sub-tasks", "err", err)
		}
		tasks := make([]ownedTask, len(ts))
		for i, st := range ts {
			tasks[i] = ownedTask{owner, st}
		}
		if len(ts) == n {
			return tasks, nil, true
		}
		ms, err := s.store.SubtaskMapsClaimReady(ctx, owner, names, 16)
		if err != nil {
			r.log.Warn("claim ready maps", "err", err)
		}
		maps := make([]ownedMap, len(ms))
		for i, m := range ms {
			maps[i] = ownedMap{owner, m}
		}
		return tasks, maps, true
	}
	r.run.Run = func(ctx context.Context, t ownedTask) (store.SubtaskResult, bool) {
		return r.runTask(ctx, t.owner, mrs[t.st.Handler], t.st)
	}
	r.run.Write = func(ctx context.Context, batch []store.SubtaskResult) {
		if _, err := s.store.SubtasksComplete(ctx, batch); err != nil {
			// Left running: the sub-tasks are run again if this life is declared dead.
			r.log.Warn("record sub-task results", "n", len(batch), "err", err)
		}
	}
	r.run.Reduce = func(ctx context.Context, m ownedMap) { r.reduce(ctx, m.owner, mrs[m.m.Handler], m.m) }
	r.run.Start(context.Background())
}

// stop ends the runner once the sub-tasks in flight have ended and their results are
// written, and hands back to pending what this life still holds (those cut short), since a
// node that stops is not declared dead.
func (r *mapRunner) stop(ctx context.Context) {
	owner, ok := r.s.engine.SubtaskOwner()
	if !r.run.Stop() {
		return
	}
	if ok {
		if _, err := r.s.store.SubtasksRelease(ctx, []string{owner}); err != nil {
			r.log.Warn("hand back sub-tasks", "owner", owner, "err", err)
		}
	}
}

func (r *mapRunner) handlers() ([]string, map[string]MapReduce) {
	r.s.mu.RLock()
	defer r.s.mu.RUnlock()
	names := make([]string, 0, len(r.s.mapReduces))
	mrs := make(map[string]MapReduce, len(r.s.mapReduces))
	for n, mr := range r.s.mapReduces {
		names = append(names, n)
		mrs[n] = mr
	}
	return names, mrs
}

func (r *mapRunner) runTask(ctx context.Context, owner string, mr MapReduce, st *store.Subtask) (store.SubtaskResult, bool) {
	sc := &mapScope{s: r.s, executionID: st.ExecutionID, jobID: st.JobID, handler: st.Handler, parentID: st.ID,
		depth: st.Depth + 1, maxAttempts: st.MaxAttempts}
	tctx := context.WithValue(ctx, mapScopeKey{}, sc)
	tctx = context.WithValue(tctx, subtaskKey{}, &Subtask{ID: st.ID, ExecutionID: st.ExecutionID, ParentID: st.ParentID, Depth: st.Depth, Attempt: st.Attempt})
	res := store.SubtaskResult{ID: st.ID, Attempt: st.Attempt, Owner: owner, State: store.SubtaskSucceeded}
	out, err := runGuarded(func() (json.RawMessage, error) { return mr.Task(tctx, json.RawMessage(st.Payload)) })
	if err == nil {
		err = engine.CheckSubtaskResult(out)
	}
	if err != nil {
		res.State, res.Message = store.SubtaskFailed, err.Error()
	} else {
		res.Result = string(out)
	}
	if err != nil && ctx.Err() != nil {
		return res, false // cut short by a stop: released (stop) and run again, not recorded as failed
	}
	return res, true
}

// runGuarded turns a panic of a task into its failure.
func runGuarded(fn func() (json.RawMessage, error)) (out json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn()
}

// reduce runs the map's Reduce and completes its execution with the outcome.
func (r *mapRunner) reduce(ctx context.Context, owner string, mr MapReduce, m *store.SubtaskMap) {
	started := r.s.clock.Now()
	res := &MapResults{q: r.s.store, ExecutionID: m.ExecutionID, Total: m.Total}
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic in reduce: %v", p)
			}
		}()
		return mr.Reduce(ctx, res)
	}()
	if err != nil && ctx.Err() != nil {
		return // cut short by a stop: the map is released with this life and reduced elsewhere
	}
	// A reduce that ended is recorded even when the node is stopping meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	out := engine.RemoteResult{ExecutionID: m.ExecutionID, State: store.ExecSucceeded, Started: started, Finished: r.s.clock.Now()}
	if err != nil {
		out.State, out.Message = store.ExecFailed, err.Error()
	}
	if _, err := r.s.engine.CompleteReduce(ctx, owner, out); err != nil {
		r.log.Warn("complete a reduced run", "execution", m.ExecutionID, "err", err)
	}
}
