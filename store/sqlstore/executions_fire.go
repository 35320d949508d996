package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sundial-scheduler/sundial/store"
)

// Executions that are not over live in executions_live; when one ends it moves, with its id,
// to the history table executions (migration 00005 says why).

// ExecutionsLockDuePending locks the due pending executions (retries, recovered fires, child
// fires) through executions_live_pending_idx: on PostgreSQL and SQLite a partial index on
// node = ” (a pending execution belongs to no node, and only it), on MySQL (state, time).
func (e *executor) ExecutionsLockDuePending(ctx context.Context, dueBefore int64, limit int) ([]*store.Execution, error) {
	xs, err := scanExecutions(e.query(ctx, "SELECT "+executionCols+" FROM executions_live WHERE node = '' AND state = 'pending'"+
		" AND scheduled_at <= ? ORDER BY scheduled_at LIMIT ?"+e.d().lockSkip(), dueBefore, limitOr(limit)))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: lock executions due by %d: %w", dueBefore, err)
	}
	return xs, nil
}

// ownedBy is the condition that an execution belongs to the life o, with its arguments.
func ownedBy(o store.Owner) (string, []any) {
	return "node = ? AND incarnation = ?", []any{o.Node, o.Incarnation}
}

// ExecutionsAcquire moves pending executions to acquired by o.
func (e *executor) ExecutionsAcquire(ctx context.Context, o store.Owner, ids []int64) ([]int64, error) {
	won, err := e.casExecutions(ctx, "executions_live", ids, "state = 'acquired', node = ?, incarnation = ?", []any{o.Node, o.Incarnation}, "state = 'pending'", nil)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: acquire %d executions for %v: %w", len(ids), o, err)
	}
	return won, nil
}

// ExecutionsMarkRunning moves o's acquired executions to running, stamped with their job's
// current script version (the script the run is about to be given). No index of the live
// table names state, fired_at or script_version, so on PostgreSQL this is a heap-only update.
func (e *executor) ExecutionsMarkRunning(ctx context.Context, o store.Owner, ids []int64, firedAt int64) ([]int64, error) {
	owned, args := ownedBy(o)
	won, err := e.casExecutions(ctx, "executions_live", ids, "state = 'running', fired_at = CASE WHEN scheduled_at > ? THEN scheduled_at ELSE ? END,"+
		" script_version = COALESCE((SELECT j.script_version FROM jobs j WHERE j.id = executions_live.job_id), 0)",
		[]any{firedAt, firedAt}, owned+" AND state = 'acquired'", args)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: mark %d executions running for %v: %w", len(ids), o, err)
	}
	return won, nil
}

// casExecutions runs UPDATE table SET set WHERE id IN ids AND cond, one statement per chunk,
// and returns the ids it changed.
func (e *executor) casExecutions(ctx context.Context, table string, ids []int64, set string, setArgs []any, cond string, condArgs []any) ([]int64, error) {
	if e.d().kind == postgres {
		// id = ANY(array): one statement text for any batch, and an index condition on the
		// primary key whatever the planner believes of the table's size. (A join on unnest
		// was planned, with stale statistics, as a scan of the whole live table.)
		got, err := scanInt64s(e.query(ctx, "UPDATE "+table+" SET "+set+" WHERE id = ANY(?::bigint[]) AND "+cond+" RETURNING id",
			concat(setArgs, []any{ids}, condArgs)...))
		if err != nil {
			return nil, err
		}
		return got, nil
	}
	var won []int64
	for _, c := range chunks(len(ids)) {
		in, idArgs := inList(ids[c[0]:c[1]])
		if e.d().kind == sqlite {
			got, err := scanInt64s(e.query(ctx, "UPDATE "+table+" SET "+set+" WHERE id IN "+in+" AND "+cond+" RETURNING id",
				concat(setArgs, idArgs, condArgs)...))
			if err != nil {
				return won, err
			}
			won = append(won, got...)
			continue
		}
		// MySQL has no UPDATE ... RETURNING: lock the rows that match, then update those. The
		// rows are found through the primary key, as the UPDATE finds them: a plan through a
		// secondary index of cond (alarm_state's, say) would lock that index's entries before
		// the rows, the reverse of the UPDATE's order, and two claimers deadlocked that way.
		// InnoDB may still roll one of two overlapping claims back to break a deadlock (the
		// UPDATE moves their entries in the secondary indexes on the state columns): nothing of
		// it was applied, and a claim that runs in its own transaction is simply made again.
		var got []int64
		err := e.retryDeadlock(ctx, func(e *executor) error {
			var err error
			got, err = scanInt64s(e.query(ctx, "SELECT id FROM "+table+" FORCE INDEX (PRIMARY) WHERE id IN "+in+" AND "+cond+" ORDER BY id"+e.d().lock(),
				concat(idArgs, condArgs)...))
			if err != nil || len(got) == 0 {
				return err
			}
			in, idArgs := inList(got)
			_, err = e.exec(ctx, "UPDATE "+table+" SET "+set+" WHERE id IN "+in, concat(setArgs, idArgs)...)
			return err
		})
		if err != nil {
			return won, err
		}
		won = append(won, got...)
	}
	return won, nil
}

func concat(parts ...[]any) []any {
	var out []any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// moveToHistory ends live executions: it locks those with the given ids that meet cond (all
// live ones matching cond when ids is nil), lets end set their final fields, inserts them into
// the history and deletes them from the live table, in one transaction. It returns them as
// stored.
func (e *executor) moveToHistory(ctx context.Context, ids []int64, cond string, condArgs []any, end func(*store.Execution)) ([]*store.Execution, error) {
	var moved []*store.Execution
	err := e.inTx(ctx, func(e *executor) error {
		wheres, whereArgs := e.liveWheres(ids, cond, condArgs)
		if e.d().kind == sqlite {
			// One writer at a time: the DELETE's RETURNING hands back the rows it removed, and
			// nothing can change them before the history insert below. One statement fewer
			// per batch than a locking read, an insert and a delete.
			for i, where := range wheres {
				xs, err := scanExecutions(e.query(ctx, "DELETE FROM executions_live WHERE "+where+" RETURNING "+executionCols, whereArgs[i]...))
				if err != nil {
					return err
				}
				moved = append(moved, xs...)
			}
			slices.SortFunc(moved, func(a, b *store.Execution) int { return cmp.Compare(a.ID, b.ID) })
			for _, x := range moved {
				if end != nil {
					end(x)
				}
			}
			return e.insertHistory(ctx, moved)
		}
		for i, where := range wheres {
			xs, err := scanExecutions(e.query(ctx, "SELECT "+executionCols+" FROM executions_live WHERE "+where+" ORDER BY id"+e.d().lock(), whereArgs[i]...))
			if err != nil {
				return err
			}
			moved = append(moved, xs...)
		}
		if len(moved) == 0 {
			return nil
		}
		movedIDs := make([]int64, len(moved))
		for i, x := range moved {
			if end != nil {
				end(x)
			}
			movedIDs[i] = x.ID
		}
		if err := e.insertHistory(ctx, moved); err != nil {
			return err
		}
		return e.deleteLive(ctx, movedIDs)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: end %d executions: %w", len(moved), err)
	}
	return moved, nil
}

// liveWheres are the conditions (with their arguments) that select the live executions with
// the given ids that meet cond, or all that meet cond for nil ids: one per chunk of ids.
func (e *executor) liveWheres(ids []int64, cond string, condArgs []any) ([]string, [][]any) {
	var wheres []string
	var whereArgs [][]any
	switch {
	case ids == nil:
		return []string{cond}, [][]any{condArgs}
	case e.d().kind == postgres:
		wheres, whereArgs = []string{"id = ANY(?::bigint[])"}, [][]any{{ids}}
	default:
		for _, c := range chunks(len(ids)) {
			in, idArgs := inList(ids[c[0]:c[1]])
			wheres, whereArgs = append(wheres, "id IN "+in), append(whereArgs, idArgs)
		}
	}
	if cond != "" {
		for i := range wheres {
			wheres[i], whereArgs[i] = wheres[i]+" AND "+cond, concat(whereArgs[i], condArgs)
		}
	}
	return wheres, whereArgs
}

// insertHistory writes ended executions, with their ids, to the history.
func (e *executor) insertHistory(ctx context.Context, xs []*store.Execution) error {
	if e.d().kind == postgres {
		cols, sel, from, arrays, err := executionUnnest(e.d(), xs, true)
		if err != nil {
			return err
		}
		_, err = e.exec(ctx, "INSERT INTO executions ("+strings.Join(cols, ", ")+") SELECT "+sel+" FROM "+from, arrays...)
		return err
	}
	for _, c := range chunks(len(xs)) {
		cols, values, args, err := executionRows(e.d(), xs[c[0]:c[1]], true)
		if err != nil {
			return err
		}
		if _, err := e.exec(ctx, "INSERT INTO executions ("+strings.Join(cols, ", ")+") VALUES "+values, args...); err != nil {
			return err
		}
	}
	return nil
}

// deleteLive deletes live executions by id.
func (e *executor) deleteLive(ctx context.Context, ids []int64) error {
	if e.d().kind == postgres {
		_, err := e.exec(ctx, "DELETE FROM executions_live WHERE id = ANY(?::bigint[])", ids)
		return err
	}
	for _, c := range chunks(len(ids)) {
		in, idArgs := inList(ids[c[0]:c[1]])
		if _, err := e.exec(ctx, "DELETE FROM executions_live WHERE id IN "+in, idArgs...); err != nil {
			return err
		}
	}
	return nil
}

// ExecutionsComplete moves running executions to the history with their results' states.
func (e *executor) ExecutionsComplete(ctx context.Context, rs []store.ExecutionResult) ([]int64, error) {
	return e.complete(ctx, nil, rs)
}

// ExecutionsCompleteOwned is ExecutionsComplete for o's runs only.
func (e *executor) ExecutionsCompleteOwned(ctx context.Context, o store.Owner, rs []store.ExecutionResult) ([]int64, error) {
	return e.complete(ctx, &o, rs)
}

// complete moves running executions (of owner, when not nil) to the history.
func (e *executor) complete(ctx context.Context, owner *store.Owner, rs []store.ExecutionResult) ([]int64, error) {
	cond, condArgs := "state = 'running'", []any(nil)
	if owner != nil {
		owned, args := ownedBy(*owner)
		cond, condArgs = cond+" AND "+owned, args
	}
	for _, r := range rs {
		if !r.State.Terminal() {
			return nil, fmt.Errorf("sqlstore: complete execution %d: result state %q is not terminal", r.ID, r.State)
		}
	}
	rs = firstResults(rs)
	if e.d().kind == postgres {
		won, err := e.completePostgres(ctx, cond, condArgs, rs)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: complete %d executions: %w", len(rs), err)
		}
		return won, nil
	}
	byID := make(map[int64]*store.ExecutionResult, len(rs))
	ids := make([]int64, len(rs))
	for i := range rs {
		byID[rs[i].ID], ids[i] = &rs[i], rs[i].ID
	}
	moved, err := e.moveToHistory(ctx, ids, cond, condArgs, func(x *store.Execution) { applyResult(x, byID[x.ID]) })
	if err != nil {
		return nil, err
	}
	won := make([]int64, len(moved))
	for i, x := range moved {
		won[i] = x.ID
	}
	return won, nil
}

// firstResults drops every result after the first for the same execution: one execution
// moves to the history once, and on PostgreSQL a second result would join the one deleted
// row twice and insert it twice (a duplicate primary key that fails the whole batch, on every
// retry).
func firstResults(rs []store.ExecutionResult) []store.ExecutionResult {
	seen := make(map[int64]bool, len(rs))
	out := rs[:0:0]
	for _, r := range rs {
		if !seen[r.ID] {
			seen[r.ID] = true
			out = append(out, r)
		}
	}
	return out
}

func applyResult(x *store.Execution, r *store.ExecutionResult) {
	x.State, x.HandleCode, x.HandleMsg, x.FinishedAt = r.State, r.HandleCode, r.HandleMsg, r.FinishedAt
	if r.StartedAt != 0 {
		x.StartedAt = r.StartedAt
	}
	if r.Data != nil {
		x.Data = r.Data
	}
	if r.AlarmState != "" {
		x.AlarmState = r.AlarmState
	}
	x.OutputLost += r.OutputLost
}

// completePostgres moves a batch in one statement: the DELETE's compare-and-set on running
// feeds the INSERT into the history, so the rows never travel to the client and back.
func (e *executor) completePostgres(ctx context.Context, cond string, condArgs []any, rs []store.ExecutionResult) ([]int64, error) {
	n := len(rs)
	ids, codes, started, finished, has := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	states, msgs, data, alarms := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	lost := make([]int64, n)
	for i, r := range rs {
		ids[i], codes[i], started[i], finished[i], lost[i] = r.ID, int64(r.HandleCode), r.StartedAt, r.FinishedAt, r.OutputLost
		states[i], msgs[i], alarms[i] = string(r.State), r.HandleMsg, string(r.AlarmState)
		if r.Data != nil {
			s, err := encodeJSON(r.Data, false)
			if err != nil {
				return nil, err
			}
			has[i], data[i] = 1, s
		}
	}
	// The DELETE selects by id = ANY(ids), not by a join on r: see casExecutions.
	return scanInt64s(e.query(ctx, "WITH r AS (SELECT * FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::text[], ?::bigint[],"+
		" ?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::bigint[]) AS r(id, state, handle_code, handle_msg, started_at, finished_at, has_data, data, alarm_state, output_lost)),"+
		" d AS (DELETE FROM executions_live WHERE id = ANY(?::bigint[]) AND "+cond+" RETURNING *)"+
		" INSERT INTO executions ("+executionCols+") SELECT d.id, d.job_id, d.trigger_id, d.scheduled_at, d.fired_at, d.cause,"+
		" d.attempt, d.node, d.executor_address, d.shard_index, d.shard_total, r.state, d.trigger_code, d.trigger_msg,"+
		" r.handle_code, r.handle_msg, CASE WHEN r.started_at = 0 THEN d.started_at ELSE r.started_at END, r.finished_at,"+
		" CASE WHEN r.alarm_state = '' THEN d.alarm_state ELSE r.alarm_state END,"+
		" CASE WHEN r.has_data = 1 THEN r.data ELSE d.data END, d.incarnation, d.script_version, d.params,"+
		" d.executor_app, d.output_lost + r.output_lost, d.interval_start, d.interval_end, d.backfill_id, d.workflow_node, d.fire_zone FROM d JOIN r ON r.id = d.id RETURNING id",
		concat([]any{ids, states, codes, msgs, started, finished, has, data, alarms, lost, ids}, condArgs)...))
}

// ExecutionsReleaseAcquired hands o's acquired executions back to pending.
func (e *executor) ExecutionsReleaseAcquired(ctx context.Context, o store.Owner) (int64, error) {
	owned, args := ownedBy(o)
	res, err := e.exec(ctx, "UPDATE executions_live SET state = 'pending', node = '', incarnation = '' WHERE "+owned+" AND state = 'acquired'", args...)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: release executions of %v: %w", o, err)
	}
	return affected(res)
}

// ExecutionsOwners lists the lives of node that hold live executions, by a scan of the small
// live table (no index names node: see migration 00005).
func (e *executor) ExecutionsOwners(ctx context.Context, node string) ([]store.Owner, error) {
	rows, err := e.query(ctx, "SELECT DISTINCT incarnation FROM executions_live WHERE node = ? AND (state = 'acquired' OR ("+
		nodesRun+")) ORDER BY incarnation", node)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: owners of node %q: %w", node, err)
	}
	defer rows.Close()
	var out []store.Owner
	for rows.Next() {
		o := store.Owner{Node: node}
		if err := rows.Scan(&o.Incarnation); err != nil {
			return nil, fmt.Errorf("sqlstore: owners of node %q: %w", node, err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: owners of node %q: %w", node, err)
	}
	return out, nil
}

// nodesRun is the condition that a running execution is its node's to lose (a run waiting
// for its sub-tasks is not): an in-process
// run, or a remote run whose acceptance was not recorded (trigger code
// store.DispatchAccepted) and whose executor instance is not registered. A run sent to an
// instance that is registered may have been taken (the node died, or lost the database,
// between the executor's answer and its record): that executor's heartbeats decide, as for a
// run it accepted — lost if they do not list it a grace after its dispatch, or when the
// instance goes silent or restarts. Losing it here would re-run it beside the executor's run.
const nodesRun = "state = 'running' AND (executor_address = '' OR trigger_code <> 200 AND NOT EXISTS (SELECT 1 FROM registry r" +
	" WHERE r.app = executions_live.executor_app AND r.address = executions_live.executor_address" +
	" AND r.instance = executions_live.executor_instance AND r.instance <> ''))" +
	notMapping

// notMapping keeps a run that mapped out of the losses of its node and of its executor: it
// waits for its sub-tasks, which outlive the node or executor that started it, and the runner
// that claims its map reduces and completes it (subtasks.go).
const notMapping = " AND NOT EXISTS (SELECT 1 FROM subtask_maps sm WHERE sm.execution_id = executions_live.id AND sm.state <> 'done')"

// ExecutionsLoseRunning marks the running executions of a dead life lost and returns them.
func (e *executor) ExecutionsLoseRunning(ctx context.Context, o store.Owner) ([]*store.Execution, error) {
	owned, args := ownedBy(o)
	return e.loseWhere(ctx, owned+" AND "+nodesRun, args)
}

// loseWhere ends the live executions matching cond as lost, stamped with the database clock.
func (e *executor) loseWhere(ctx context.Context, cond string, args []any) ([]*store.Execution, error) {
	return e.loseIDsWhere(ctx, nil, cond, args)
}

// loseIDsWhere is loseWhere for the executions ids only (every one for nil ids).
func (e *executor) loseIDsWhere(ctx context.Context, ids []int64, cond string, args []any) ([]*store.Execution, error) {
	var lost []*store.Execution
	err := e.inTx(ctx, func(e *executor) error {
		now, err := e.DBNow(ctx)
		if err != nil {
			return err
		}
		instances, err := e.liveInstances(ctx, ids, cond, args)
		if err != nil {
			return err
		}
		lost, err = e.moveToHistory(ctx, ids, cond, args, func(x *store.Execution) {
			x.State, x.FinishedAt = store.ExecLost, now
		})
		if err != nil {
			return err
		}
		return e.keepInstances(ctx, instances)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: lose executions where %s %v: %w", cond, args, err)
	}
	return lost, nil
}

// liveInstances reads, and locks, the executor instance of each live execution loseIDsWhere
// is about to lose (those handed to one), by instance.
func (e *executor) liveInstances(ctx context.Context, ids []int64, cond string, condArgs []any) (map[string][]int64, error) {
	out := map[string][]int64{}
	wheres, whereArgs := e.liveWheres(ids, cond, condArgs)
	for i, where := range wheres {
		rows, err := e.query(ctx, "SELECT id, executor_instance FROM executions_live WHERE "+where+
			" AND executor_instance <> '' ORDER BY id"+e.d().lock(), whereArgs[i]...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var instance string
			if err := rows.Scan(&id, &instance); err != nil {
				rows.Close()
				return nil, err
			}
			out[instance] = append(out[instance], id)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// keepInstances writes the instance lost executions had been handed to into the history, so
// that a late result is taken from that instance only (ExecutionLostTo). Losses are rare, and
// the runs of one lost executor usually share one instance: one statement per instance.
func (e *executor) keepInstances(ctx context.Context, instances map[string][]int64) error {
	for instance, ids := range instances {
		wheres, whereArgs := e.liveWheres(ids, "", nil)
		for i, where := range wheres {
			if _, err := e.exec(ctx, "UPDATE executions SET executor_instance = ? WHERE "+where,
				concat([]any{instance}, whereArgs[i])...); err != nil {
				return fmt.Errorf("keep the executor instance of lost executions: %w", err)
			}
		}
	}
	return nil
}
