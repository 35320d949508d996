package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/sundial-scheduler/sundial/store"
)

// ExecutionsLockDuePending locks the due pending executions (retries, recovered fires, child
// fires). The literal state lets PostgreSQL and SQLite use executions_pending_idx.
func (e *executor) ExecutionsLockDuePending(ctx context.Context, dueBefore int64, limit int) ([]*store.Execution, error) {
	xs, err := scanExecutions(e.query(ctx, "SELECT "+executionCols+" FROM executions WHERE state = 'pending' AND scheduled_at <= ?"+
		" ORDER BY scheduled_at LIMIT ?"+e.d().lockSkip(), dueBefore, limitOr(limit)))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: lock executions due by %d: %w", dueBefore, err)
	}
	return xs, nil
}

// ExecutionsAcquire moves pending executions to acquired by node.
func (e *executor) ExecutionsAcquire(ctx context.Context, node string, ids []int64) ([]int64, error) {
	won, err := e.casExecutions(ctx, ids, "state = 'acquired', node = ?", []any{node}, "state = 'pending'", nil)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: acquire %d executions for %q: %w", len(ids), node, err)
	}
	return won, nil
}

// ExecutionsMarkRunning moves node's acquired executions to running.
func (e *executor) ExecutionsMarkRunning(ctx context.Context, node string, ids []int64, firedAt int64) ([]int64, error) {
	won, err := e.casExecutions(ctx, ids, "state = 'running', fired_at = ?", []any{firedAt}, "node = ? AND state = 'acquired'", []any{node})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: mark %d executions running for %q: %w", len(ids), node, err)
	}
	return won, nil
}

// casExecutions runs UPDATE executions SET set WHERE id IN ids AND cond, one statement per
// chunk, and returns the ids it changed.
func (e *executor) casExecutions(ctx context.Context, ids []int64, set string, setArgs []any, cond string, condArgs []any) ([]int64, error) {
	if e.d().kind == postgres {
		// Join on the ids rather than filter by an IN list: with an IN list the planner may
		// walk a node's whole acquired set through executions_live_node_idx and test every row
		// against the list (measured: 200 ms for 1,000 ids among 20,000 acquired rows).
		got, err := scanInt64s(e.query(ctx, "UPDATE executions AS t SET "+set+" FROM unnest(?::bigint[]) AS u(id)"+
			" WHERE t.id = u.id AND "+cond+" RETURNING t.id", concat(setArgs, []any{ids}, condArgs)...))
		if err != nil {
			return nil, err
		}
		return got, nil
	}
	var won []int64
	for _, c := range chunks(len(ids)) {
		in, idArgs := inList(ids[c[0]:c[1]])
		if e.d().returning && e.d().kind != mysqlKind {
			got, err := scanInt64s(e.query(ctx, "UPDATE executions SET "+set+" WHERE id IN "+in+" AND "+cond+" RETURNING id",
				concat(setArgs, idArgs, condArgs)...))
			if err != nil {
				return won, err
			}
			won = append(won, got...)
			continue
		}
		// MySQL has no UPDATE ... RETURNING: lock the rows that match, then update those.
		err := e.inTx(ctx, func(e *executor) error {
			got, err := scanInt64s(e.query(ctx, "SELECT id FROM executions WHERE id IN "+in+" AND "+cond+" ORDER BY id"+e.d().lock(),
				concat(idArgs, condArgs)...))
			if err != nil || len(got) == 0 {
				return err
			}
			in, idArgs := inList(got)
			if _, err := e.exec(ctx, "UPDATE executions SET "+set+" WHERE id IN "+in, concat(setArgs, idArgs)...); err != nil {
				return err
			}
			won = append(won, got...)
			return nil
		})
		if err != nil {
			return won, err
		}
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

var completeCols = []string{"id", "state", "handle_code", "handle_msg", "started_at", "finished_at", "has_data", "data", "alarm_state"}

const completeSet = `state = u.state, handle_code = u.handle_code, handle_msg = u.handle_msg,
	started_at = CASE WHEN u.started_at = 0 THEN t.started_at ELSE u.started_at END, finished_at = u.finished_at,
	data = CASE WHEN u.has_data = 1 THEN u.data ELSE t.data END,
	alarm_state = CASE WHEN u.alarm_state = '' THEN t.alarm_state ELSE u.alarm_state END`

// ExecutionsComplete moves running executions to their results' states, one statement per
// chunk.
func (e *executor) ExecutionsComplete(ctx context.Context, rs []store.ExecutionResult) ([]int64, error) {
	var won []int64
	for _, c := range chunks(len(rs)) {
		got, err := e.completeExecutions(ctx, rs[c[0]:c[1]])
		won = append(won, got...)
		if err != nil {
			return won, fmt.Errorf("sqlstore: complete %d executions: %w", len(rs), err)
		}
	}
	return won, nil
}

func (e *executor) completeExecutions(ctx context.Context, rs []store.ExecutionResult) ([]int64, error) {
	n := len(rs)
	ids, codes, started, finished, has := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	states, msgs, data, alarms := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, r := range rs {
		if !r.State.Terminal() {
			return nil, fmt.Errorf("execution %d: result state %q is not terminal", r.ID, r.State)
		}
		ids[i], codes[i], started[i], finished[i] = r.ID, int64(r.HandleCode), r.StartedAt, r.FinishedAt
		states[i], msgs[i], alarms[i] = string(r.State), r.HandleMsg, string(r.AlarmState)
		if r.Data != nil {
			s, err := encodeJSON(r.Data, false)
			if err != nil {
				return nil, err
			}
			has[i], data[i] = 1, s
		}
	}
	rowArgs := func(keep map[int64]bool) []any {
		args := make([]any, 0, n*len(completeCols))
		for i := range rs {
			if keep == nil || keep[ids[i]] {
				args = append(args, ids[i], states[i], codes[i], msgs[i], started[i], finished[i], has[i], data[i], alarms[i])
			}
		}
		return args
	}
	switch e.d().kind {
	case postgres:
		return scanInt64s(e.query(ctx, "UPDATE executions AS t SET "+completeSet+
			" FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::text[], ?::bigint[], ?::bigint[], ?::bigint[], ?::text[], ?::text[])"+
			" AS u("+strings.Join(completeCols, ", ")+") WHERE t.id = u.id AND t.state = 'running' RETURNING t.id",
			ids, states, codes, msgs, started, finished, has, data, alarms))
	case sqlite:
		return scanInt64s(e.query(ctx, "WITH "+e.d().valuesTable(completeCols, n)+" UPDATE executions AS t SET "+completeSet+
			" FROM u WHERE t.id = u.id AND t.state = 'running' RETURNING id", rowArgs(nil)...))
	}
	var won []int64
	err := e.inTx(ctx, func(e *executor) error {
		in, idArgs := inList(ids)
		got, err := scanInt64s(e.query(ctx, "SELECT id FROM executions WHERE id IN "+in+" AND state = 'running' ORDER BY id FOR UPDATE", idArgs...))
		if err != nil || len(got) == 0 {
			return err
		}
		keep := make(map[int64]bool, len(got))
		for _, id := range got {
			keep[id] = true
		}
		args := rowArgs(keep)
		if _, err := e.exec(ctx, "UPDATE "+e.d().valuesTable(completeCols, len(args)/len(completeCols))+
			" STRAIGHT_JOIN executions AS t ON t.id = u.id SET "+qualifySet(completeSet), args...); err != nil {
			return err
		}
		won = got
		return nil
	})
	return won, err
}

// ExecutionsReleaseAcquired hands a dead node's acquired executions back to pending.
func (e *executor) ExecutionsReleaseAcquired(ctx context.Context, node string) (int64, error) {
	res, err := e.exec(ctx, "UPDATE executions SET state = 'pending', node = '' WHERE node = ? AND state = 'acquired'", node)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: release executions of %q: %w", node, err)
	}
	return affected(res)
}

// ExecutionsLoseRunning marks a dead node's running executions lost and returns them.
func (e *executor) ExecutionsLoseRunning(ctx context.Context, node string) ([]*store.Execution, error) {
	if e.d().kind != mysqlKind {
		xs, err := scanExecutions(e.query(ctx, "UPDATE executions SET state = 'lost', finished_at = "+e.d().nowMillis()+
			" WHERE node = ? AND state = 'running' RETURNING "+executionCols, node))
		if err != nil {
			return nil, fmt.Errorf("sqlstore: lose executions of %q: %w", node, err)
		}
		return xs, nil
	}
	var xs []*store.Execution
	err := e.inTx(ctx, func(e *executor) error {
		var err error
		xs, err = scanExecutions(e.query(ctx, "SELECT "+executionCols+" FROM executions WHERE node = ? AND state = 'running' ORDER BY id FOR UPDATE", node))
		if err != nil || len(xs) == 0 {
			return err
		}
		now, err := e.DBNow(ctx)
		if err != nil {
			return err
		}
		ids := make([]int64, len(xs))
		for i, x := range xs {
			ids[i] = x.ID
			x.State, x.FinishedAt = store.ExecLost, now
		}
		in, idArgs := inList(ids)
		_, err = e.exec(ctx, "UPDATE executions SET state = 'lost', finished_at = ? WHERE id IN "+in, concat([]any{now}, idArgs)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: lose executions of %q: %w", node, err)
	}
	return xs, nil
}
