package sundial

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/store"
)

// Execution is what a handler knows about the fire it runs.
type Execution struct {
	ID          int64
	JobID       int64
	TriggerID   int64 // 0 for a fire no trigger caused (TriggerNow, retry of one, child)
	ScheduledAt time.Time
	FiredAt     time.Time
	// Attempt counts from 0; a retry has Attempt > 0.
	Attempt int
	// Cause is why it fired: schedule, manual, retry, misfire, recovery, child, workflow.
	Cause  string
	Params string
	// Data is the job's data map, a copy private to this run. When the job persists data, the
	// map as the handler leaves it is stored after a successful run.
	Data map[string]any
	// IdempotencyKey names the fire (its trigger and scheduled time): retries and recovery
	// re-runs of it share the key, so a side effect can be made once. An executor's runs
	// carry the same key (executor.Run).
	IdempotencyKey string
	// IntervalStart and IntervalEnd are the run's data interval: the trigger's scheduled time
	// before this one and this one; for a coalesced catch-up the start of the first missed
	// interval and the last missed time; for a backfill run the span of its scheduled times.
	// Zero for runs no schedule made (TriggerNow, child jobs).
	IntervalStart, IntervalEnd time.Time
	// BackfillID is the backfill that made the run; 0 for none.
	BackfillID int64
	// FireZone is the IANA zone the schedule fired in: a trigger of several zones fires at
	// its times in each, once per zone. "" for runs no schedule made.
	FireZone string
}

// ExecutionFrom returns the execution a handler's context carries, or nil outside a handler.
func ExecutionFrom(ctx context.Context) *Execution {
	ex, _ := jobrun.RunFrom[*Execution](ctx)
	return ex
}

// Logger returns a logger whose lines are stored with the handler's execution (its output);
// outside a handler it returns slog.Default().
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := jobrun.LoggerFrom(ctx); ok {
		return l
	}
	return slog.Default()
}

// localDispatcher runs fires with the handlers registered in this process.
type localDispatcher struct{ s *Scheduler }

func (d localDispatcher) Dispatch(ctx context.Context, f *engine.Fire) engine.Result {
	d.s.mu.RLock()
	h, ok := d.s.handlers[f.Job.Handler]
	d.s.mu.RUnlock()
	if !ok {
		return engine.Result{Err: fmt.Errorf("no handler %q is registered on this node", f.Job.Handler)}
	}
	ex := f.Execution
	run := &Execution{
		ID: ex.ID, JobID: ex.JobID, TriggerID: ex.TriggerID, ScheduledAt: time.UnixMilli(ex.ScheduledAt),
		FiredAt: time.UnixMilli(ex.FiredAt), Attempt: ex.Attempt, Cause: string(ex.Cause),
		Params: f.Params(), Data: maps.Clone(f.Job.Data),
		IdempotencyKey: jobrun.IdempotencyKey(ex.JobID, ex.TriggerID, ex.ScheduledAt, ex.ShardIndex),
		IntervalStart:  jobrun.Millis(ex.IntervalStart), IntervalEnd: jobrun.Millis(ex.IntervalEnd), BackfillID: ex.BackfillID,
		FireZone: ex.FireZone,
	}
	if run.Data == nil {
		run.Data = map[string]any{}
	}
	out := new(outputLines)
	ctx, extras, err := withExtras(ctx, f)
	if err != nil {
		return engine.Result{Err: err}
	}
	ctx = jobrun.WithRun(ctx, run)
	ctx = jobrun.WithLogger(ctx, slog.New(jobrun.NewOutputHandler(out.add)))
	ctx, sc := d.s.withMapScope(ctx, f)
	err = h(ctx)
	res := engine.Result{Err: err, Logs: out.take(), Return: extras.take()}
	if sc != nil && sc.mapped && err == nil {
		// The run waits for its sub-tasks without this worker: the node that reduces its map
		// completes it (mapRunner.reduce). An async result's lines are not written by the
		// engine, so Start's are stored here.
		res.Async = true
		if len(res.Logs) > 0 {
			now := d.s.clock.Now().UnixMilli()
			lines := make([]store.LogLine, len(res.Logs))
			for i, l := range res.Logs {
				lines[i] = store.LogLine{Line: int64(i + 1), At: now, Message: l}
			}
			if _, err := d.s.store.ExecutionLogAppend(ctx, ex.ID, lines); err != nil {
				return engine.Result{Err: fmt.Errorf("store the output of a run that mapped: %w", err)}
			}
		}
	}
	if f.Job.PersistData {
		res.Data = run.Data
	}
	return res
}

// outputLines collects a run's log lines; a handler may log from several goroutines.
type outputLines struct {
	mu    sync.Mutex
	lines []string
}

func (o *outputLines) add(_ time.Time, s string) {
	o.mu.Lock()
	o.lines = append(o.lines, s)
	o.mu.Unlock()
}

func (o *outputLines) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lines
}
