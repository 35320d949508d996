package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// acquireLoop runs acquisition rounds until the node stops: at once again after a full
// batch (there is more due work), otherwise after PollInterval or a wake-up.
func (e *Engine) acquireLoop(l *lifecycle) {
	for l.ctx.Err() == nil {
		for l.fires.full() {
			select {
			case <-l.fires.room:
			case <-l.ctx.Done():
				return
			}
		}
		now := e.clock.Now()
		n, err := e.acquireRound(l.ctx, l, now)
		if err != nil && l.ctx.Err() == nil {
			e.log.Error("acquisition round failed", "err", err)
		}
		if err == nil && n >= e.cfg.BatchSize {
			continue
		}
		// The next poll is due a poll interval after this round began, however long the
		// round took: polls keep their cadence, and a clock that moved meanwhile is caught up.
		if !e.sleepUntil(l.ctx, now.Add(e.cfg.PollInterval), l.wake) {
			return
		}
	}
}

// acquireRound takes the fires due within the look-ahead window in one transaction: due
// triggers (misfire policies applied, one execution row per fire, the trigger advanced) and
// pending executions (retries, recovered fires). It queues them for firing and returns how
// many it took.
func (e *Engine) acquireRound(ctx context.Context, l *lifecycle, now time.Time) (int, error) {
	dueBefore := now.Add(e.cfg.LookAhead).UnixMilli()

	tx, err := e.store.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()

	rows, err := tx.TriggersLockDue(ctx, dueBefore, e.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("lock due triggers: %w", err)
	}
	var (
		fires   []*pendingFire
		execs   []*store.Execution
		updates = make([]store.TriggerFireUpdate, 0, len(rows))
	)
	for _, row := range rows {
		upd, rowExecs := e.advanceTrigger(ctx, tx, row, now, dueBefore, e.cfg.BatchSize-len(execs))
		updates = append(updates, upd)
		for _, ex := range rowExecs {
			execs = append(execs, ex)
			fires = append(fires, &pendingFire{exec: ex, priority: row.Priority})
		}
	}

	if room := e.cfg.BatchSize - len(execs); room > 0 {
		pending, err := tx.ExecutionsLockDuePending(ctx, dueBefore, room)
		if err != nil {
			return 0, fmt.Errorf("lock due pending executions: %w", err)
		}
		if len(pending) > 0 {
			ids := make([]int64, len(pending))
			for i, p := range pending {
				ids[i] = p.ID
			}
			won, err := tx.ExecutionsAcquire(ctx, e.cfg.NodeID, ids)
			if err != nil {
				return 0, fmt.Errorf("acquire pending executions: %w", err)
			}
			wonSet := idSet(won)
			for _, p := range pending {
				if wonSet[p.ID] {
					p.State, p.Node = store.ExecAcquired, e.cfg.NodeID
					fires = append(fires, &pendingFire{exec: p, priority: 5})
				}
			}
		}
	}

	if len(execs) > 0 {
		dups, err := tx.ExecutionsInsert(ctx, execs)
		if err != nil {
			return 0, fmt.Errorf("insert executions: %w", err)
		}
		if len(dups) > 0 {
			// The trigger row lock makes this impossible; if it ever happens the unique key
			// has done its job, and the duplicates must not be fired.
			e.log.Error("duplicate fires refused by the unique key", "count", len(dups))
			dupSet := map[*store.Execution]bool{}
			for _, d := range dups {
				dupSet[d] = true
			}
			kept := fires[:0]
			for _, f := range fires {
				if !dupSet[f.exec] {
					kept = append(kept, f)
				}
			}
			fires = kept
		}
	}
	if len(updates) > 0 {
		if _, err := tx.TriggersUpdateAfterFire(ctx, updates); err != nil {
			return 0, fmt.Errorf("advance triggers: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit acquisition: %w", err)
	}
	e.log.Debug("acquired", "fires", len(fires), "triggers", len(rows), "took", e.clock.Now().Sub(now))
	e.stats.Acquired.Add(int64(len(fires)))
	e.signals.roundAcquired(len(fires))
	l.fires.push(fires...)
	return len(fires), nil
}

// advanceTrigger computes the fires of one locked trigger that fall in the window (at most
// room) and the trigger's new state. A trigger that cannot be rebuilt goes to state error
// with the reason, so one bad row never stalls the batch.
func (e *Engine) advanceTrigger(ctx context.Context, ex store.Querier, row *store.Trigger, now time.Time, dueBefore int64, room int) (store.TriggerFireUpdate, []*store.Execution) {
	tr, cal, err := e.buildTrigger(ctx, ex, row)
	if err != nil {
		e.log.Warn("trigger moved to error", "trigger", row.ID, "err", err)
		return store.TriggerFireUpdate{ID: row.ID, NextFireAt: row.NextFireAt, PrevFireAt: row.PrevFireAt,
			TimesFired: row.TimesFired, State: store.TriggerError, ErrorMessage: err.Error()}, nil
	}
	origSpec, origStart := row.Spec, tr.Start
	// The calendar may have changed since Next was computed.
	tr.SkipExcluded(cal)
	cause := store.CauseSchedule
	misfired := applyMisfire(tr, cal, now, e.cfg.MisfireThreshold)
	if misfired {
		cause = store.CauseMisfire
		e.stats.Misfired.Add(1)
	}
	var execs []*store.Execution
	for !tr.Next.IsZero() && tr.Next.UnixMilli() <= dueBefore && len(execs) < room {
		execs = append(execs, &store.Execution{
			JobID: row.JobID, TriggerID: row.ID, ScheduledAt: tr.Next.UnixMilli(),
			Cause: cause, Node: e.cfg.NodeID, State: store.ExecAcquired,
		})
		cause = store.CauseSchedule
		tr.Triggered(cal)
	}
	upd := store.TriggerFireUpdate{ID: row.ID, State: store.TriggerWaiting, NextFireAt: millis(tr.Next),
		PrevFireAt: millis(tr.Prev), TimesFired: int64(tr.TimesTriggered)}
	if tr.Next.IsZero() {
		upd.State = store.TriggerComplete
	}
	// Only a misfire instruction rewrites the schedule itself (a simple trigger restarted
	// now), so only then is it encoded again.
	if misfired {
		if spec := schedule.EncodeSpec(tr.Schedule); spec != origSpec {
			upd.Spec = spec
		}
		if !tr.Start.Equal(origStart) {
			upd.StartAt = tr.Start.UnixMilli()
		}
	}
	return upd, execs
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func idSet(ids []int64) map[int64]bool {
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}
