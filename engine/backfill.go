package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// MaxBackfillTimes bounds the scheduled times one backfill may cover, so a range asked for by
// mistake (a per-second trigger over a year) is refused rather than written.
const MaxBackfillTimes = 100_000

// BackfillRequest asks for a job's runs at every scheduled time of one of its triggers in
// [From, To].
type BackfillRequest struct {
	TriggerID int64
	From, To  time.Time
	// MaxConcurrent bounds the backfill's live runs; 1 (or 0) runs them one after another.
	MaxConcurrent int
	// Chunk is how many consecutive scheduled times one run covers; 1 (or 0) is a run each.
	Chunk     int
	CreatedBy string
}

// BackfillRun is one run a backfill makes: the span of scheduled times it covers.
type BackfillRun struct {
	schedule.Interval
	// Times are the scheduled times the run covers, in order (Chunk of them, fewer at the end).
	Times []time.Time
}

// PlanBackfill lists the runs a backfill of the trigger over [from, to] makes, in order, each
// with its data interval: from the scheduled time before its first time (the trigger's start
// before its first fire ever) to its last. It writes nothing (a dry run shows this).
func (e *Engine) PlanBackfill(ctx context.Context, row *store.Trigger, from, to time.Time, chunk int) ([]BackfillRun, error) {
	tr, cal, loc, err := e.previewed(ctx, row)
	if err != nil {
		return nil, err
	}
	times, before := tr.FireTimesIn(cal, from, to, MaxBackfillTimes+1)
	if len(times) > MaxBackfillTimes {
		return nil, schedule.Fieldf("to", "the range has more than %d scheduled times; backfill a shorter one", MaxBackfillTimes)
	}
	runs := chunkRuns(times, before, tr.Start, chunk)
	for i := range runs {
		runs[i].Start, runs[i].End = runs[i].Start.In(loc), runs[i].End.In(loc)
		for j := range runs[i].Times {
			runs[i].Times[j] = runs[i].Times[j].In(loc)
		}
	}
	return runs, nil
}

// chunkRuns groups times into runs of chunk, each run's interval starting at the time before
// its first (before for the first run; start, clamped to the first time, when before is zero).
func chunkRuns(times []time.Time, before, start time.Time, chunk int) []BackfillRun {
	if chunk < 1 {
		chunk = 1
	}
	prev := before
	if prev.IsZero() && len(times) > 0 {
		prev = start
		if prev.After(times[0]) {
			prev = times[0]
		}
	}
	var runs []BackfillRun
	for i := 0; i < len(times); i += chunk {
		ts := times[i:min(i+chunk, len(times))]
		runs = append(runs, BackfillRun{Interval: schedule.Interval{Start: prev, End: ts[len(ts)-1]}, Times: ts})
		prev = ts[len(ts)-1]
	}
	return runs
}

// CreateBackfill stores a backfill of the trigger's job over the request's range, running:
// the acquisition loops of the cluster's nodes make its runs. It returns the stored record.
func (e *Engine) CreateBackfill(ctx context.Context, req BackfillRequest) (*store.Backfill, error) {
	row, err := e.store.TriggerGet(ctx, req.TriggerID)
	if err != nil {
		return nil, fmt.Errorf("backfill trigger %d: %w", req.TriggerID, err)
	}
	runs, err := e.PlanBackfill(ctx, row, req.From, req.To, req.Chunk)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, r := range runs {
		total += len(r.Times)
	}
	b := &store.Backfill{JobID: row.JobID, TriggerID: row.ID, FromAt: req.From.UnixMilli(), ToAt: req.To.UnixMilli(),
		MaxConcurrent: max(req.MaxConcurrent, 1), Chunk: max(req.Chunk, 1), Total: int64(total), CreatedBy: req.CreatedBy}
	// In store.InTx, so an audit entry the caller put in ctx is written with the backfill.
	if err := store.InTx(ctx, e.store, func(q store.Querier) error { return q.BackfillInsert(ctx, b) }); err != nil {
		return nil, err
	}
	e.backfillAdded.Store(true)
	e.Wake()
	return b, nil
}

// CancelBackfill stops a running backfill: it makes no further run, and its runs not yet
// started are canceled. Runs already running finish. A backfill that ended is left as it is.
func (e *Engine) CancelBackfill(ctx context.Context, id int64) (*store.Backfill, error) {
	var b *store.Backfill
	err := store.InTx(ctx, e.store, func(q store.Querier) error {
		var err error
		if b, err = q.BackfillLock(ctx, id); err != nil || b.State != store.BackfillRunning {
			return err
		}
		b.State = store.BackfillCanceled
		if err := q.BackfillUpdate(ctx, b); err != nil {
			return err
		}
		_, err = q.ExecutionsCancelPendingOfBackfill(ctx, id, e.clock.Now().UnixMilli())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cancel backfill %d: %w", id, err)
	}
	return b, nil
}

// backfillBatch is how many running backfills one step advances.
const backfillBatch = 16

// backfillRound makes the next runs of the running backfills, each up to its concurrency
// limit, as pending executions that acquisition then takes like any other. A backfill's runs
// and the move of its cursor past their times commit together under the backfill's row
// lock, so a node that dies at any point neither skips a time nor runs one twice: the next
// round, on any node, starts from the committed cursor.
func (e *Engine) backfillRound(ctx context.Context, now time.Time) (int, error) {
	// A plain read first: most rounds find no backfill, and need no transaction.
	probe, err := e.store.BackfillsLockRunning(ctx, 1)
	if err != nil || len(probe) == 0 {
		return 0, err
	}
	tx, err := e.store.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin backfill round: %w", err)
	}
	defer tx.Rollback()
	bs, err := tx.BackfillsLockRunning(ctx, backfillBatch)
	if err != nil {
		return 0, err
	}
	made := 0
	for _, b := range bs {
		n, err := e.advanceBackfill(ctx, tx, b, now)
		if err != nil {
			return 0, fmt.Errorf("backfill %d: %w", b.ID, err)
		}
		made += n
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit backfill round: %w", err)
	}
	e.signals.backfillStepped(made)
	return made, nil
}

// advanceBackfill makes b's next runs within its concurrency limit and moves its cursor, in
// tx; a backfill whose every time has a run and whose runs all ended becomes done.
func (e *Engine) advanceBackfill(ctx context.Context, tx store.Tx, b *store.Backfill, now time.Time) (int, error) {
	live, err := tx.ExecutionsLiveOfBackfill(ctx, b.ID)
	if err != nil {
		return 0, err
	}
	// A backfill of a workflow's trigger job: each fire ends at once and starts a workflow
	// run, which is the run the backfill's concurrency bounds and whose end it waits for.
	wfRuns, err := tx.WorkflowRunsLiveOfBackfill(ctx, b.ID)
	if err != nil {
		return 0, err
	}
	live += wfRuns
	if b.Created >= b.Total {
		if live == 0 {
			b.State = store.BackfillDone
			return 0, tx.BackfillUpdate(ctx, b)
		}
		return 0, nil
	}
	room := b.MaxConcurrent - live
	if room <= 0 {
		return 0, nil
	}
	row, err := tx.TriggerGet(ctx, b.TriggerID)
	if errors.Is(err, store.ErrNotFound) {
		b.State = store.BackfillCanceled // its trigger is gone: nothing says when its times are
		return 0, tx.BackfillUpdate(ctx, b)
	}
	if err != nil {
		return 0, err
	}
	tr, cal, err := e.buildTrigger(ctx, tx, row)
	if err != nil {
		return 0, err
	}
	from := time.UnixMilli(b.FromAt)
	if b.CursorAt != 0 {
		from = time.UnixMilli(b.CursorAt + 1)
	}
	times, before := tr.FireTimesIn(cal, from, time.UnixMilli(b.ToAt), room*b.Chunk)
	if b.CursorAt != 0 {
		before = time.UnixMilli(b.CursorAt)
	}
	runs := chunkRuns(times, before, tr.Start, b.Chunk)
	execs := make([]*store.Execution, 0, len(runs))
	for _, r := range runs {
		ex := &store.Execution{JobID: b.JobID, ScheduledAt: now.UnixMilli(), Cause: store.CauseBackfill,
			State: store.ExecPending, BackfillID: b.ID, IntervalStart: r.Start.UnixMilli(), IntervalEnd: r.End.UnixMilli()}
		fromTrigger(ex, row)
		execs = append(execs, ex)
		b.Created += int64(len(r.Times))
		b.CursorAt = r.End.UnixMilli()
	}
	if len(times) == 0 {
		b.Created = b.Total // the schedule changed since the plan: no time is left in the range
	}
	if len(execs) > 0 {
		if _, err := tx.ExecutionsInsert(ctx, execs); err != nil {
			return 0, err
		}
	}
	return len(execs), tx.BackfillUpdate(ctx, b)
}
