package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// acquireLoop runs acquisition rounds until the node stops: at once again after a full
// batch (there is more due work), otherwise after PollInterval or a wake-up. Each round takes
// at most BatchSize fires, fewer while rounds take longer than batchTarget (batchsize.go).
func (e *Engine) acquireLoop(l *lifecycle) {
	sizer := newBatchSizer(e.cfg.BatchSize)
	// Backfills are looked for at most once a poll interval while none makes runs (or when
	// this node stores a new one): under load rounds follow each other back to back, and a
	// probe per round would tax every fire for a feature most clusters rarely use.
	var nextBackfill time.Time
	for l.ctx.Err() == nil {
		for l.fires.full() {
			select {
			case <-l.fires.room:
			case <-l.ctx.Done():
				return
			}
		}
		now := e.clock.Now()
		if e.backfillAdded.Swap(false) || !now.Before(nextBackfill) {
			made, err := e.backfillRound(l.ctx, now)
			if err != nil && l.ctx.Err() == nil {
				e.log.Error("backfill round failed", "err", err)
			}
			if made == 0 {
				nextBackfill = now.Add(e.cfg.PollInterval)
			}
		}
		size := sizer.size
		n, took, err := e.acquireRound(l.ctx, l, now, size)
		if err != nil && l.ctx.Err() == nil {
			e.log.Error("acquisition round failed", "err", err)
		}
		if unanswered := (*unansweredCommit)(nil); errors.As(err, &unanswered) {
			e.settleRound(l, unanswered)
		}
		if err == nil {
			sizer.next(n, took)
		}
		if err == nil && n >= size {
			continue
		}
		// The next poll is due a poll interval after this round began, however long the
		// round took: polls keep their cadence, and a clock that moved meanwhile is caught up.
		if !e.sleepUntil(l.ctx, now.Add(e.cfg.PollInterval), l.wake) {
			return
		}
	}
}

// acquireRound takes up to size fires due within the look-ahead window in one transaction:
// due triggers (misfire policies applied, one execution row per fire, the trigger advanced)
// and pending executions (retries, recovered fires). It queues them for firing and returns
// how many it took, and how long its transaction lasted.
//
// The transaction is begun at deferred priority: on SQLite, whose one writer it holds, the
// node's claims, results and heartbeat waiting for it go first (sqlstore's gate). Taking
// more fires ahead is what can wait when the node cannot start those it holds.
func (e *Engine) acquireRound(ctx context.Context, l *lifecycle, now time.Time, size int) (n int, took time.Duration, err error) {
	dueBefore := now.Add(e.cfg.LookAhead).UnixMilli()

	// A round in flight holds the gate shared from its first statement until its fires are
	// queued, so that a round being settled sees every fire the others took meanwhile.
	l.rounds.gate.RLock()
	defer l.rounds.gate.RUnlock()
	tx, err := e.store.Begin(store.WithPriority(ctx, store.PriorityDeferred))
	if err != nil {
		return 0, 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	began := e.clock.Now()
	// Only a life the cluster counts alive acquires: the lock orders this round with a
	// leader that declares the life dead, so no fire is taken by a life already recovered.
	if err := tx.NodeHold(ctx, l.owner); err != nil {
		return 0, 0, fmt.Errorf("hold the node's row: %w", err)
	}

	rows, err := tx.TriggersLockDue(ctx, dueBefore, size)
	if err != nil {
		return 0, 0, fmt.Errorf("lock due triggers: %w", err)
	}
	var (
		fires   []*pendingFire
		execs   []*store.Execution
		updates = make([]store.TriggerFireUpdate, 0, len(rows))
	)
	for _, row := range rows {
		upd, rowExecs := e.advanceTrigger(ctx, tx, l.owner, row, now, dueBefore, size-len(execs))
		updates = append(updates, upd)
		for _, ex := range rowExecs {
			execs = append(execs, ex)
			fires = append(fires, &pendingFire{exec: ex, priority: row.Priority, acquiredAt: now, notBefore: jitterDue(row, ex.ScheduledAt)})
		}
	}

	if room := size - len(execs); room > 0 {
		pending, err := tx.ExecutionsLockDuePending(ctx, dueBefore, room)
		if err != nil {
			return 0, 0, fmt.Errorf("lock due pending executions: %w", err)
		}
		if len(pending) > 0 {
			ids := make([]int64, len(pending))
			for i, p := range pending {
				ids[i] = p.ID
			}
			won, err := tx.ExecutionsAcquire(ctx, l.owner, ids)
			if err != nil {
				return 0, 0, fmt.Errorf("acquire pending executions: %w", err)
			}
			wonSet := idSet(won)
			var returned []*pendingFire
			for _, p := range pending {
				if wonSet[p.ID] {
					p.State, p.Node, p.Incarnation = store.ExecAcquired, l.owner.Node, l.owner.Incarnation
					f := &pendingFire{exec: p, priority: 5, acquiredAt: now}
					fires = append(fires, f)
					if returnedFire(p) {
						returned = append(returned, f)
					}
				}
			}
			if err := e.misfireReturned(ctx, tx, returned, now); err != nil {
				return 0, 0, err
			}
		}
	}

	if len(execs) > 0 {
		dups, err := tx.ExecutionsInsert(ctx, execs)
		if err != nil {
			return 0, 0, fmt.Errorf("insert executions: %w", err)
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
			return 0, 0, fmt.Errorf("advance triggers: %w", err)
		}
	}
	var round uint64 // the commit's place among the life's, when it takes fires
	if len(fires) > 0 {
		round = l.rounds.committing()
	}
	if err := tx.Commit(); err != nil {
		if len(fires) == 0 {
			return 0, 0, fmt.Errorf("commit acquisition: %w", err)
		}
		return 0, 0, &unansweredCommit{round: round, fires: fires, err: err} // settled by settleRound
	}
	took = e.clock.Now().Sub(began)
	e.log.Debug("acquired", "fires", len(fires), "of", size, "triggers", len(rows), "took", took, "waited", began.Sub(now))
	e.queueAcquired(ctx, l, fires)
	if len(fires) > 0 {
		l.rounds.settled(round)
	}
	return len(fires), took, nil
}

// queueAcquired hands the fires a round took to the starter.
func (e *Engine) queueAcquired(ctx context.Context, l *lifecycle, fires []*pendingFire) {
	l.rounds.queued(fires)
	e.stats.Acquired.Add(int64(len(fires)))
	e.applyFireRate(ctx, fires)
	e.signals.roundAcquired(len(fires))
	l.fires.push(fires...)
}

// advanceTrigger computes the fires of one locked trigger that fall in the window (at most
// room) and the trigger's new state. A trigger that cannot be rebuilt goes to state error
// with the reason, so one bad row never stalls the batch.
func (e *Engine) advanceTrigger(ctx context.Context, ex store.Querier, o store.Owner, row *store.Trigger, now time.Time, dueBefore int64, room int) (store.TriggerFireUpdate, []*store.Execution) {
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
	var execs []*store.Execution
	misfired := false
	window := e.lateAllowance(row, tr.Next)
	if row.CatchUp == store.CatchUpCoalesce {
		// The missed fires become one run now covering them all; the misfire policy, made
		// for fires one by one, does not apply. Without room the trigger waits as it is:
		// coalescing moves it past the missed fires, which only the run may do.
		if room <= 0 {
			return store.TriggerFireUpdate{ID: row.ID, State: row.State, NextFireAt: row.NextFireAt,
				PrevFireAt: row.PrevFireAt, TimesFired: row.TimesFired}, nil
		}
		if iv, ok := tr.Coalesce(cal, now, window); ok {
			e.stats.Misfired.Add(1)
			ex := &store.Execution{
				JobID: row.JobID, TriggerID: row.ID, ScheduledAt: now.UnixMilli(), Cause: store.CauseMisfire,
				Node: o.Node, Incarnation: o.Incarnation, State: store.ExecAcquired,
				IntervalStart: iv.Start.UnixMilli(), IntervalEnd: iv.End.UnixMilli(), FireZone: row.TimeZone,
			}
			fromTrigger(ex, row)
			execs = append(execs, ex)
		}
	} else if misfired = applyMisfire(tr, cal, now, window); misfired {
		cause = store.CauseMisfire
		e.stats.Misfired.Add(1)
	}
	// A trigger's limited runs are consumed here, in the transaction that takes its fires.
	limited := func() bool { return row.RunLimit > 0 && int64(tr.TimesTriggered) >= row.RunLimit }
	for !tr.Next.IsZero() && tr.Next.UnixMilli() <= dueBefore && len(execs) < room && !limited() {
		ex := &store.Execution{
			JobID: row.JobID, TriggerID: row.ID, ScheduledAt: tr.Next.UnixMilli(),
			Cause: cause, Node: o.Node, Incarnation: o.Incarnation, State: store.ExecAcquired,
			IntervalStart: tr.IntervalStart().UnixMilli(), IntervalEnd: tr.Next.UnixMilli(), FireZone: row.TimeZone,
		}
		fromTrigger(ex, row)
		execs = append(execs, ex)
		cause = store.CauseSchedule
		tr.Triggered(cal)
	}
	upd := store.TriggerFireUpdate{ID: row.ID, State: store.TriggerWaiting, NextFireAt: millis(tr.Next),
		PrevFireAt: millis(tr.Prev), TimesFired: int64(tr.TimesTriggered)}
	if tr.Next.IsZero() || limited() {
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

// returnedFire reports whether x is a trigger's own fire that went back to pending after a
// node had taken it (the node died, or stopped): a trigger's fires carry cause schedule or
// misfire and are attempt 0, shard 0; retries, recoveries and the rest have their own causes.
func returnedFire(x *store.Execution) bool {
	return x.TriggerID != 0 && x.Attempt == 0 && x.ShardIndex == 0 &&
		(x.Cause == store.CauseSchedule || x.Cause == store.CauseMisfire)
}

// misfireReturned applies their triggers' misfire policies to returned fires that are late
// by more than the misfire threshold: the policies that wait for the next regular fire skip
// them, those that fire now fire the latest of a trigger's once (now, as it is overdue) and
// skip the rest, and ignore fires each. The trigger rows are not touched: their later fires
// have gone on meanwhile, and none of those is fired again.
//
// A returned fire of a trigger with jitter starts at the same offset after its scheduled time
// as when it was first taken, and its lateness counts from that start.
func (e *Engine) misfireReturned(ctx context.Context, q store.Querier, returned []*pendingFire, now time.Time) error {
	byTrigger := map[int64][]*pendingFire{}
	for _, f := range returned {
		byTrigger[f.exec.TriggerID] = append(byTrigger[f.exec.TriggerID], f)
	}
	for id, fs := range byTrigger {
		row, err := q.TriggerGet(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted: its fires run as any other fire whose trigger went away
		}
		if err != nil {
			return fmt.Errorf("read trigger %d of returned fires: %w", id, err)
		}
		window := e.catchUpWindow(row)
		late := fs[:0:0]
		for _, f := range fs {
			f.notBefore = jitterDue(row, f.exec.ScheduledAt)
			if now.Sub(time.UnixMilli(f.due())) > window {
				late = append(late, f)
			}
		}
		if fs = late; len(fs) == 0 {
			continue
		}
		tr, cal, err := e.buildTrigger(ctx, q, row)
		if err != nil {
			continue // the acquisition round moves the trigger to error; its fires run
		}
		slices.SortFunc(fs, func(a, b *pendingFire) int { return cmp.Compare(a.exec.ScheduledAt, b.exec.ScheduledAt) })
		skip := len(fs) // fs[:skip] are skipped, the rest run
		first := time.UnixMilli(fs[0].exec.ScheduledAt)
		switch tr.Missed(cal, first, now, e.lateAllowance(row, first)) {
		case schedule.MissedFireAll:
			continue
		case schedule.MissedFireOnce:
			skip = len(fs) - 1
		case schedule.MissedSkip:
		}
		e.stats.Misfired.Add(1)
		for _, f := range fs[:skip] {
			f.missed = fmt.Sprintf("skipped: missed by more than the misfire threshold; misfire policy %s", tr.Misfire)
		}
	}
	return nil
}

// jitter is the offset a fire of row scheduled at t starts at after t (0 without jitter).
func jitter(row *store.Trigger, t time.Time) time.Duration {
	return schedule.JitterOffset(row.ID, t, time.Duration(row.JitterMs)*time.Millisecond)
}

// jitterDue is the millisecond a fire of row scheduled at ms starts, when the trigger has
// jitter; 0 (no delay) without.
func jitterDue(row *store.Trigger, ms int64) int64 {
	if row.JitterMs <= 0 {
		return 0
	}
	return ms + jitter(row, time.UnixMilli(ms)).Milliseconds()
}

// lateAllowance is how late past its scheduled time t a fire of row may be before its
// misfire policy (or its coalesced catch-up) applies: the trigger's catch-up window, counted
// from the fire's jittered start.
func (e *Engine) lateAllowance(row *store.Trigger, t time.Time) time.Duration {
	return e.catchUpWindow(row) + jitter(row, t)
}

// catchUpWindow is how late the trigger's fire may be before its misfire policy (or its
// coalesced catch-up) applies: its own window when it has one, else the cluster's threshold.
func (e *Engine) catchUpWindow(row *store.Trigger) time.Duration {
	if row.CatchUpWindow > 0 {
		return time.Duration(row.CatchUpWindow) * time.Millisecond
	}
	return e.cfg.MisfireThreshold
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
