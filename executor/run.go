package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
)

// Run describes the execution a handler is running.
type Run struct {
	ExecutionID int64
	JobID       int64
	// TriggerID is 0 for a fire no trigger caused (a manual fire, a child job).
	TriggerID int64
	Handler   string
	Params    string
	// ParamsSecret says Params are secret: keep them out of output, errors and logs.
	ParamsSecret bool
	ShardIndex   int
	ShardTotal   int
	Attempt      int
	ScheduledAt  time.Time
	// FiredAt is when the server started the fire; zero from a server that does not say.
	FiredAt time.Time
	// IdempotencyKey names the fire (its trigger, scheduled time and shard): retries and
	// recovery re-runs of it share the key, so a side effect can be made once.
	IdempotencyKey string
	// Timeout is the job's timeout (0: none); the context's deadline enforces it.
	Timeout time.Duration
	// IntervalStart and IntervalEnd are the run's data interval (see wire.RunRequest); zero
	// for runs no schedule made, or from a server that does not send them.
	IntervalStart, IntervalEnd time.Time
	// BackfillID is the backfill that made the run; 0 for none.
	BackfillID int64
	// FireZone is the IANA zone the schedule fired in (see wire.RunRequest); "" for runs no
	// schedule made.
	FireZone string
	// WorkflowInput is, for the run of a workflow node, the run's params and its parent
	// nodes' results as JSON ({"run_id", "node", "params", "parents"}); "" otherwise.
	WorkflowInput string
}

// RunFrom returns the run a handler's context carries.
func RunFrom(ctx context.Context) (Run, bool) {
	return jobrun.RunFrom[Run](ctx)
}

// Logger returns the run's logger: its lines are the execution's output, streamed to the
// server. Outside a run it returns a logger that discards everything.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := jobrun.LoggerFrom(ctx); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// runState is one accepted run, queued or running. Nothing in it is shared with other runs.
type runState struct {
	run    Run
	policy jobrun.Overlap
	h      Handler
	cancel context.CancelCauseFunc // nil while queued
	// parent is the server's dispatch span (invalid when the server traces nothing).
	parent trace.SpanContext
	// traceparent is the run's trace context, sent back with its result.
	traceparent string
}

// traceContext is the propagation format of the protocol: W3C trace context.
var traceContext = propagation.TraceContext{}

// spanRun names the executor's span around a handler.
const spanRun = "sundial.executor.run"

// stopCause is why a run's context was canceled; it decides the reported state.
type stopCause struct {
	state string
	code  int
	msg   string
}

func (c *stopCause) Error() string { return c.msg }

// DefaultMaxRuns is the default Config.MaxRuns.
const DefaultMaxRuns = 1000

// accept applies the job's concurrency policy to a run request. busy says the executor did
// not take the run and the server should offer it again, here or to another executor: it
// holds Config.MaxRuns runs, or it is stopping (the answer's message says which).
func (e *Executor) accept(req wire.RunRequest, parent trace.SpanContext) (resp wire.RunResponse, busy bool) {
	policy, err := jobrun.ParseOverlap(req.Concurrency, req.MaxConcurrent)
	if err != nil {
		return wire.RunResponse{Message: err.Error()}, false
	}
	if req.ExecutionID <= 0 {
		return wire.RunResponse{Message: fmt.Sprintf("execution_id %d: want a positive id", req.ExecutionID)}, false
	}
	rs := &runState{policy: policy, run: runOf(req), parent: parent}

	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.handlers[req.Handler]
	if h == nil {
		return wire.RunResponse{Message: fmt.Sprintf("unknown handler %q", req.Handler)}, false
	}
	rs.h = h
	if _, dup := e.runs[req.ExecutionID]; dup {
		// The server repeated a call whose answer it lost: the run is already ours.
		return wire.RunResponse{Accepted: true, Message: "already accepted"}, false
	}
	if _, done := e.ended[req.ExecutionID]; done {
		// The same, for a run that has finished since: its result is reported or spooled.
		return wire.RunResponse{Accepted: true, Message: "already ran"}, false
	}
	// Checked after the repeats above: a run already taken is answered taken, whatever else
	// holds (answered busy, the server would send it to another executor: it would run twice).
	if e.stopping {
		return wire.RunResponse{Message: "the executor is stopping"}, true
	}
	if e.cfg.MaxRuns > 0 && len(e.runs) >= e.cfg.MaxRuns {
		return wire.RunResponse{Message: fmt.Sprintf("busy: the executor holds %d runs, its most (MaxRuns)", len(e.runs))}, true
	}
	cause := &stopCause{state: wire.StateCanceled, code: wire.CodeFailed, msg: fmt.Sprintf("replaced by execution %d", req.ExecutionID)}
	admission, dropped := e.conc.Admit(req.JobID, req.ExecutionID, policy, rs, cause)
	for _, old := range dropped {
		// Waited, and this newer run took its place (buffer_one, cancel, terminate).
		go e.finish(old, wire.Result{State: wire.StateCanceled, Code: wire.CodeFailed, Message: cause.msg + " before it started"}, time.Time{})
	}
	switch admission {
	case jobrun.Queued:
		e.runs[req.ExecutionID] = rs
		active, queued := e.conc.Load(req.JobID)
		return wire.RunResponse{Accepted: true, Message: fmt.Sprintf("queued behind %d run(s)", active+queued-1)}, false
	case jobrun.Skipped:
		active, queued := e.conc.Load(req.JobID)
		return wire.RunResponse{Message: fmt.Sprintf("discarded: job %d has %d run(s) in progress", req.JobID, active+queued)}, false
	}
	e.runs[req.ExecutionID] = rs
	e.startLocked(rs)
	return wire.RunResponse{Accepted: true}, false
}

// runOf is the run a request describes. A server that sends no idempotency key gets the one
// it would have sent.
func runOf(req wire.RunRequest) Run {
	r := Run{
		ExecutionID: req.ExecutionID, JobID: req.JobID, TriggerID: req.TriggerID, Handler: req.Handler,
		Params: req.Params, ParamsSecret: req.ParamsSecret, ShardIndex: req.ShardIndex, ShardTotal: req.ShardTotal, Attempt: req.Attempt,
		ScheduledAt: time.UnixMilli(req.ScheduledAt), IdempotencyKey: req.IdempotencyKey,
		Timeout:       time.Duration(req.TimeoutMs) * time.Millisecond,
		IntervalStart: jobrun.Millis(req.IntervalStart), IntervalEnd: jobrun.Millis(req.IntervalEnd), BackfillID: req.BackfillID,
		WorkflowInput: string(req.WorkflowInput), FireZone: req.FireZone,
	}
	if req.FiredAt != 0 {
		r.FiredAt = time.UnixMilli(req.FiredAt)
	}
	if r.IdempotencyKey == "" {
		r.IdempotencyKey = jobrun.IdempotencyKey(req.JobID, req.TriggerID, req.ScheduledAt, req.ShardIndex)
	}
	return r
}

// startLocked starts an admitted run; e.mu is held.
func (e *Executor) startLocked(rs *runState) {
	ctx, cancel := context.WithCancelCause(e.baseCtx)
	rs.cancel = cancel
	e.conc.Started(rs.run.JobID, rs.run.ExecutionID, cancel)
	e.running.Add(1)
	go e.execute(ctx, rs)
}

// kill cancels a running run or drops a queued one.
func (e *Executor) kill(id int64) bool {
	e.mu.Lock()
	rs := e.runs[id]
	if rs == nil {
		e.mu.Unlock()
		return false
	}
	if rs.cancel != nil {
		rs.cancel(&stopCause{state: wire.StateCanceled, code: wire.CodeFailed, msg: "killed"})
		e.mu.Unlock()
		return true
	}
	e.conc.Unqueue(rs.run.JobID, id)
	e.mu.Unlock()
	e.finish(rs, wire.Result{State: wire.StateCanceled, Code: wire.CodeFailed, Message: "killed before it started"}, time.Time{})
	return true
}

func (e *Executor) idle(jobID int64) bool {
	active, queued := e.conc.Load(jobID)
	return active == 0 && queued == 0
}

// execute runs one handler and reports its result.
func (e *Executor) execute(ctx context.Context, rs *runState) {
	defer e.running.Done()
	defer rs.cancel(nil)
	if rs.run.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, rs.run.Timeout,
			&stopCause{state: wire.StateTimedOut, code: wire.CodeTimeout, msg: fmt.Sprintf("timed out after %v", rs.run.Timeout)})
		defer cancel()
	}
	// The handler's context carries the fire's trace: the server's dispatch span, and this
	// executor's span under it when its TracerProvider records.
	if rs.parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, rs.parent)
		var span trace.Span
		ctx, span = e.cfg.TracerProvider.Tracer("github.com/sundial-scheduler/sundial/executor").Start(ctx, spanRun,
			trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.Int64("sundial.execution.id", rs.run.ExecutionID),
				attribute.String("sundial.handler", rs.run.Handler)))
		defer span.End()
		c := propagation.MapCarrier{}
		traceContext.Inject(ctx, c)
		rs.traceparent = c["traceparent"]
	}
	sink := newLogSink(e, rs.run.ExecutionID)
	box := &resultBox{}
	ctx = context.WithValue(ctx, resultKey{}, box)
	ctx = jobrun.WithRun(ctx, rs.run)
	ctx = jobrun.WithLogger(ctx, slog.New(jobrun.NewOutputHandler(sink.add)))

	started := e.cfg.Clock.Now()
	errc := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				e.log.Error("handler panicked", "execution_id", rs.run.ExecutionID, "panic", p, "stack", string(debug.Stack()))
				errc <- fmt.Errorf("handler %q panicked: %v", rs.run.Handler, p)
			}
		}()
		errc <- rs.h(ctx)
	}()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		t := e.cfg.Clock.NewTimer(abandonGrace)
		select {
		case err = <-errc:
			t.Stop()
		case <-t.C():
			e.log.Warn("handler ignored its cancellation; reporting without it",
				"execution_id", rs.run.ExecutionID, "handler", rs.run.Handler, "cause", context.Cause(ctx))
			err = context.Cause(ctx)
		}
	}
	res := outcome(ctx, err)
	if res.State == wire.StateSucceeded {
		res.Result = wire.RawJSON(box.take())
	}
	if res.State != wire.StateSucceeded {
		Logger(ctx).Error(res.Message)
	}
	// Output first: whoever reads the result should find the lines that led to it.
	res.Lines, res.LinesLost = sink.close()
	if res.State == wire.StateSucceeded && box.isMapped() {
		// Not held any more and not reported: the server keeps a run that mapped out of
		// this instance's liveness, and whoever reduces its map completes it.
		if len(res.Lines) > 0 {
			e.log.Warn("output lines lost: the server did not take them and a mapped run reports no result",
				"execution_id", rs.run.ExecutionID, "lines", len(res.Lines))
		}
		e.release(rs)
		return
	}
	e.finish(rs, res, started)
}

// outcome turns a handler's return into a result. A cancellation wins over what the
// handler returned: a run that was killed or timed out did not finish its work.
func outcome(ctx context.Context, err error) wire.Result {
	var sc *stopCause
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &sc) {
		return wire.Result{State: sc.state, Code: sc.code, Message: sc.msg}
	}
	if ctx.Err() != nil && err == nil {
		err = context.Cause(ctx)
	}
	if err == nil {
		return wire.Result{State: wire.StateSucceeded, Code: wire.CodeOK, Message: "ok"}
	}
	return wire.Result{State: wire.StateFailed, Code: wire.CodeFailed, Message: truncate(err.Error(), 16<<10)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "… (truncated)"
}

// endedMemory is how long a finished run is remembered against a repeated /run: far longer
// than the server's repeats of a call take.
const endedMemory = 10 * time.Minute

// endedRun is one entry of Executor.endedOrder.
type endedRun struct {
	id int64
	at time.Time
}

// rememberEnded records a finished run and forgets those that ended more than endedMemory
// ago; e.mu is held.
func (e *Executor) rememberEnded(id int64) {
	now := e.cfg.Clock.Now()
	e.ended[id] = now
	e.endedOrder = append(e.endedOrder, endedRun{id, now})
	for e.endedHead < len(e.endedOrder) && now.Sub(e.endedOrder[e.endedHead].at) > endedMemory {
		old := e.endedOrder[e.endedHead]
		if at, ok := e.ended[old.id]; ok && at.Equal(old.at) { // not ended again since
			delete(e.ended, old.id)
		}
		e.endedHead++
	}
	if e.endedHead > 1024 && e.endedHead > len(e.endedOrder)/2 {
		e.endedOrder = append(e.endedOrder[:0], e.endedOrder[e.endedHead:]...)
		e.endedHead = 0
	}
}

// finish forgets rs, starts the next queued run of its job, and hands the result to the
// reporter. started is zero for a run that never started.
func (e *Executor) finish(rs *runState, res wire.Result, started time.Time) {
	res.ExecutionID = rs.run.ExecutionID
	res.Traceparent = rs.traceparent
	res.FinishedAt = e.cfg.Clock.Now().UnixMilli()
	if !started.IsZero() {
		res.StartedAt = started.UnixMilli()
	}
	// The reporter holds the result before the run is forgotten, so a heartbeat never misses
	// the run in between (the server would declare it lost). Both happen under e.mu, with the
	// job's slot freed: a run the server sends on reading the result is admitted (accept
	// takes e.mu) only once the slot is free, and a discard job's next run is not refused.
	e.mu.Lock()
	e.rep.add(res)
	e.forgetLocked(rs)
	e.mu.Unlock()
}

// release forgets rs without a result (a run that mapped: its reduce reports it).
func (e *Executor) release(rs *runState) {
	e.mu.Lock()
	e.forgetLocked(rs)
	e.mu.Unlock()
}

// forgetLocked forgets rs and starts the next queued run of its job; e.mu is held.
func (e *Executor) forgetLocked(rs *runState) {
	delete(e.runs, rs.run.ExecutionID)
	e.rememberEnded(rs.run.ExecutionID)
	if rs.cancel != nil { // a queued run was never admitted as active
		if next, ok := e.conc.Done(rs.run.JobID, rs.run.ExecutionID); ok {
			if e.stopping {
				go e.finish(next, wire.Result{State: wire.StateCanceled, Code: wire.CodeFailed, Message: "executor stopped before the run started"}, time.Time{})
			} else {
				// The job has room now, so the next queued run is admitted to run.
				e.conc.Admit(next.run.JobID, next.run.ExecutionID, next.policy, next, nil)
				e.startLocked(next)
			}
		}
	}
}

// resultBox holds the result a handler sets (SetResult); a handler may set it from any
// goroutine.
type resultBox struct {
	mu     sync.Mutex
	result json.RawMessage
	// mapped: the run's Start mapped sub-tasks, so its outcome is the reduce's to report.
	mapped bool
}

func (b *resultBox) setMapped() {
	b.mu.Lock()
	b.mapped = true
	b.mu.Unlock()
}

func (b *resultBox) isMapped() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mapped
}

type resultKey struct{}

func (b *resultBox) take() json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.result
}

// MaxResultBytes is the largest result a run may return.
const MaxResultBytes = 64 << 10

// SetResult records v, as JSON, as the run's result, sent with its outcome: a workflow
// node's result is given to the nodes that follow it. A later call replaces an earlier one.
func SetResult(ctx context.Context, v any) error {
	b, ok := ctx.Value(resultKey{}).(*resultBox)
	if !ok {
		return errors.New("executor.SetResult called outside a handler")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("the run's result: %w", err)
	}
	if len(raw) > MaxResultBytes {
		return fmt.Errorf("the run's result is %d bytes, more than the %d allowed", len(raw), MaxResultBytes)
	}
	b.mu.Lock()
	b.result = raw
	b.mu.Unlock()
	return nil
}
