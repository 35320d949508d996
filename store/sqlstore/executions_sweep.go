package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// ExecutionsCountLive counts in-flight executions per job with one grouped query over the
// live table's job index.
func (e *executor) ExecutionsCountLive(ctx context.Context, jobIDs []int64) (map[int64]int, error) {
	out := make(map[int64]int)
	for _, c := range chunks(len(jobIDs)) {
		in, args := inList(jobIDs[c[0]:c[1]])
		rows, err := e.query(ctx, "SELECT job_id, COUNT(*) FROM executions_live WHERE job_id IN "+in+
			" AND state IN ('acquired', 'running') GROUP BY job_id", args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: count live executions of %d jobs: %w", len(jobIDs), err)
		}
		for rows.Next() {
			var id int64
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: count live executions: %w", err)
			}
			out[id] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlstore: count live executions: %w", err)
		}
	}
	return out, nil
}

// ExecutionsLatest reads each job's newest execution id in both tables. A correlated MAX per
// job and table is one descent of the (job_id, id) or job_id index in all three databases,
// where a grouped MAX over the IN list would read every execution of a busy job.
func (e *executor) ExecutionsLatest(ctx context.Context, jobIDs []int64) (map[int64]int64, error) {
	out := make(map[int64]int64)
	for _, c := range chunks(len(jobIDs)) {
		in, args := inList(jobIDs[c[0]:c[1]])
		rows, err := e.query(ctx, "SELECT j.id, (SELECT MAX(l.id) FROM executions_live l WHERE l.job_id = j.id),"+
			" (SELECT MAX(h.id) FROM executions h WHERE h.job_id = j.id) FROM jobs j WHERE j.id IN "+in, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: newest executions of %d jobs: %w", len(jobIDs), err)
		}
		for rows.Next() {
			var id int64
			var live, ended sql.NullInt64
			if err := rows.Scan(&id, &live, &ended); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: newest executions: %w", err)
			}
			if n := max(live.Int64, ended.Int64); n > 0 {
				out[id] = n
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlstore: newest executions: %w", err)
		}
	}
	return out, nil
}

// ExecutionsAlarmPending lists executions with a pending alarm; the literal state lets
// PostgreSQL and SQLite use the partial executions_alarm_idx.
func (e *executor) ExecutionsAlarmPending(ctx context.Context, afterID int64, limit int) ([]*store.Execution, error) {
	xs, err := scanExecutions(e.query(ctx, "SELECT "+executionCols+" FROM executions WHERE alarm_state = 'pending' AND id > ?"+
		" ORDER BY id LIMIT ?", afterID, limitOr(limit)))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list pending alarms: %w", err)
	}
	return xs, nil
}

// ExecutionsSetAlarm moves alarm states with a compare-and-set; a claim (to sending) is
// stamped with the database clock.
func (e *executor) ExecutionsSetAlarm(ctx context.Context, ids []int64, from, to store.AlarmState) ([]int64, error) {
	set := "alarm_state = ?"
	if to == store.AlarmSending {
		set += ", alarm_claimed_at = " + e.d().nowMillis()
	}
	won, err := e.casExecutions(ctx, "executions", ids, set, []any{string(to)}, "alarm_state = ?", []any{string(from)})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: set alarm %s -> %s of %d executions: %w", from, to, len(ids), err)
	}
	return won, nil
}

// undelivered lists the alarm states retention keeps an execution for: its alarm is still
// to be sent, or being sent.
const undelivered = "'" + string(store.AlarmPending) + "', '" + string(store.AlarmSending) + "'"

// ExecutionsDeleteFiredBefore deletes one batch of old history (ended executions only live
// there). Selecting the ids first keeps
// each DELETE a primary-key lookup (MySQL cannot DELETE with a LIMITed subquery on the same
// table) and bounds how long its locks are held.
func (e *executor) ExecutionsDeleteFiredBefore(ctx context.Context, firedBefore int64, limit int) (int64, error) {
	var n int64
	err := e.inTx(ctx, func(e *executor) error {
		ids, err := scanInt64s(e.query(ctx, "SELECT id FROM executions WHERE fired_at < ? AND alarm_state NOT IN ("+undelivered+
			") ORDER BY fired_at LIMIT ?", firedBefore, limitOr(limit)))
		if err != nil || len(ids) == 0 {
			return err
		}
		for _, c := range chunks(len(ids)) {
			in, args := inList(ids[c[0]:c[1]])
			// An execution's output and its map/reduce sub-tasks go with it.
			for _, q := range []string{"DELETE FROM execution_logs WHERE execution_id IN ", "DELETE FROM subtasks WHERE execution_id IN ",
				"DELETE FROM subtask_maps WHERE execution_id IN "} {
				if _, err := e.exec(ctx, q+in, args...); err != nil {
					return err
				}
			}
			res, err := e.exec(ctx, "DELETE FROM executions WHERE id IN "+in, args...)
			if err != nil {
				return err
			}
			m, err := affected(res)
			if err != nil {
				return err
			}
			n += m
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: delete executions fired before %d: %w", firedBefore, err)
	}
	return n, nil
}

// ExecutionsAlarmReclaim claims again up to limit alarms left sending for longer than
// olderThan by the database clock (their claimer died mid-delivery), stamping the claim anew,
// and returns them. Rows another transaction holds are skipped, so two sweeps never take the
// same alarm.
func (e *executor) ExecutionsAlarmReclaim(ctx context.Context, olderThan time.Duration, limit int) ([]*store.Execution, error) {
	var xs []*store.Execution
	err := e.inTx(ctx, func(e *executor) error {
		now, err := e.DBNow(ctx)
		if err != nil {
			return err
		}
		xs, err = scanExecutions(e.query(ctx, "SELECT "+executionCols+" FROM executions WHERE alarm_state = 'sending'"+
			" AND alarm_claimed_at < ? ORDER BY alarm_claimed_at LIMIT ?"+e.d().lockSkip(), now-olderThan.Milliseconds(), limitOr(limit)))
		if err != nil || len(xs) == 0 {
			return err
		}
		ids := make([]int64, len(xs))
		for i, x := range xs {
			ids[i] = x.ID
		}
		for _, c := range chunks(len(ids)) {
			in, args := inList(ids[c[0]:c[1]])
			if _, err := e.exec(ctx, "UPDATE executions SET alarm_claimed_at = ? WHERE id IN "+in, append([]any{now}, args...)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reclaim alarms sending for over %s: %w", olderThan, err)
	}
	return xs, nil
}
