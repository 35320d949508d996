package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sundial-scheduler/sundial/store"
)

const executionCols = "id, job_id, trigger_id, scheduled_at, fired_at, cause, attempt, node, executor_address, " +
	"shard_index, shard_total, state, trigger_code, trigger_msg, handle_code, handle_msg, started_at, finished_at, " +
	"alarm_state, data"

// executionInsertCols is executionCols without id.
const executionInsertCols = "job_id, trigger_id, scheduled_at, fired_at, cause, attempt, node, executor_address, " +
	"shard_index, shard_total, state, trigger_code, trigger_msg, handle_code, handle_msg, started_at, finished_at, " +
	"alarm_state, data"

const executionInsertWidth = 19

func scanExecution(r rowScanner) (*store.Execution, error) {
	var x store.Execution
	var trig sql.NullInt64
	var data string
	err := r.Scan(&x.ID, &x.JobID, &trig, &x.ScheduledAt, &x.FiredAt, &x.Cause, &x.Attempt, &x.Node,
		&x.ExecutorAddress, &x.ShardIndex, &x.ShardTotal, &x.State, &x.TriggerCode, &x.TriggerMsg,
		&x.HandleCode, &x.HandleMsg, &x.StartedAt, &x.FinishedAt, &x.AlarmState, &data)
	if err != nil {
		return nil, err
	}
	x.TriggerID = trig.Int64
	if err := decodeJSON(data, &x.Data); err != nil {
		return nil, err
	}
	return &x, nil
}

func scanExecutions(rows *sql.Rows, err error) ([]*store.Execution, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Execution
	for rows.Next() {
		x, err := scanExecution(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// fireKey is the unique key of an execution.
type fireKey struct {
	trigger, scheduled int64
	attempt, shard     int
}

func keyOf(x *store.Execution) fireKey {
	return fireKey{x.TriggerID, x.ScheduledAt, x.Attempt, x.ShardIndex}
}

// ExecutionsInsert inserts es with one statement per chunk, skipping duplicates.
func (e *executor) ExecutionsInsert(ctx context.Context, es []*store.Execution) ([]*store.Execution, error) {
	var dups []*store.Execution
	for _, c := range chunks(len(es)) {
		d, err := e.insertExecutions(ctx, es[c[0]:c[1]])
		if err != nil {
			return nil, err
		}
		dups = append(dups, d...)
	}
	return dups, nil
}

// executionRows returns the VALUES list and arguments inserting es.
func executionRows(es []*store.Execution) (string, []any, error) {
	args := make([]any, 0, len(es)*executionInsertWidth)
	row := placeholders(executionInsertWidth)
	values := make([]byte, 0, len(es)*(len(row)+2))
	for i, x := range es {
		data, err := encodeJSON(x.Data, x.Data == nil)
		if err != nil {
			return "", nil, err
		}
		state, alarm := x.State, x.AlarmState
		if state == "" {
			state = store.ExecPending
		}
		if alarm == "" {
			alarm = store.AlarmNone
		}
		args = append(args, x.JobID, nullInt64(x.TriggerID), x.ScheduledAt, x.FiredAt, string(x.Cause), x.Attempt,
			x.Node, x.ExecutorAddress, x.ShardIndex, x.ShardTotal, string(state), x.TriggerCode, x.TriggerMsg,
			x.HandleCode, x.HandleMsg, x.StartedAt, x.FinishedAt, string(alarm), data)
		if i > 0 {
			values = append(values, ", "...)
		}
		values = append(values, row...)
	}
	return string(values), args, nil
}

func (e *executor) insertExecutions(ctx context.Context, es []*store.Execution) ([]*store.Execution, error) {
	if e.d().kind == mysqlKind && !e.d().returning {
		return e.insertExecutionsNoReturning(ctx, es)
	}
	values, args, err := executionRows(es)
	if err != nil {
		return nil, err
	}
	// Each dialect skips rows whose fire key exists and reports the rows it inserted; the
	// caller's rows are then matched to them by fire key (rows without a trigger cannot
	// collide, and take the ids of the trigger-less rows in insertion order).
	var got []insertedExecution
	if e.d().kind == mysqlKind {
		got, err = scanInserted(e.query(ctx, "INSERT IGNORE INTO executions ("+executionInsertCols+") VALUES "+
			values+" RETURNING id, trigger_id, scheduled_at, attempt, shard_index", args...))
	} else {
		got, err = scanInserted(e.query(ctx, "INSERT INTO executions ("+executionInsertCols+") VALUES "+values+
			" ON CONFLICT (trigger_id, scheduled_at, attempt, shard_index) DO NOTHING RETURNING id, trigger_id, scheduled_at, attempt, shard_index", args...))
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
	}

	sort.Slice(got, func(i, j int) bool { return got[i].id < got[j].id })
	byKey := make(map[fireKey]int64, len(got))
	var loose []int64
	for _, g := range got {
		if g.key.trigger == 0 {
			loose = append(loose, g.id)
		} else {
			byKey[g.key] = g.id
		}
	}
	var dups []*store.Execution
	for _, x := range es {
		if x.TriggerID == 0 {
			if len(loose) == 0 {
				return nil, fmt.Errorf("sqlstore: insert executions: the database reported fewer rows than were sent")
			}
			x.ID, loose = loose[0], loose[1:]
		} else if id, ok := byKey[keyOf(x)]; ok {
			x.ID = id
			delete(byKey, keyOf(x))
		} else {
			x.ID = 0
			dups = append(dups, x)
			continue
		}
		if x.State == "" {
			x.State = store.ExecPending
		}
		if x.AlarmState == "" {
			x.AlarmState = store.AlarmNone
		}
	}
	return dups, nil
}

type insertedExecution struct {
	id  int64
	key fireKey
}

func scanInserted(rows *sql.Rows, err error) ([]insertedExecution, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []insertedExecution
	for rows.Next() {
		var g insertedExecution
		var trig sql.NullInt64
		if err := rows.Scan(&g.id, &trig, &g.key.scheduled, &g.key.attempt, &g.key.shard); err != nil {
			return nil, err
		}
		g.key.trigger = trig.Int64
		out = append(out, g)
	}
	return out, rows.Err()
}

// insertExecutionsNoReturning stands in for INSERT ... RETURNING on MySQL 8. It drops the
// fires that exist (one indexed SELECT) and inserts the rest with a plain multi-row INSERT: an
// InnoDB "simple insert" (row count known in advance) takes consecutive ids from
// LAST_INSERT_ID() in every innodb_autoinc_lock_mode, so row i gets first+i. A fire inserted
// by someone else between the two statements makes the INSERT fail with ErrAlreadyExists,
// never a second row.
func (e *executor) insertExecutionsNoReturning(ctx context.Context, es []*store.Execution) ([]*store.Execution, error) {
	var keys []any
	var tuples []string
	for _, x := range es {
		if x.TriggerID != 0 {
			keys = append(keys, x.TriggerID, x.ScheduledAt, x.Attempt, x.ShardIndex)
			tuples = append(tuples, "(?, ?, ?, ?)")
		}
	}
	taken := map[fireKey]bool{}
	if len(tuples) > 0 {
		rows, err := e.query(ctx, "SELECT trigger_id, scheduled_at, attempt, shard_index FROM executions WHERE (trigger_id, scheduled_at, attempt, shard_index) IN ("+
			strings.Join(tuples, ", ")+")", keys...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
		}
		defer rows.Close()
		for rows.Next() {
			var k fireKey
			if err := rows.Scan(&k.trigger, &k.scheduled, &k.attempt, &k.shard); err != nil {
				return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
			}
			taken[k] = true
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
		}
		rows.Close()
	}
	var fresh, dups []*store.Execution
	for _, x := range es {
		k := keyOf(x)
		if x.TriggerID != 0 && taken[k] {
			x.ID = 0
			dups = append(dups, x)
			continue
		}
		if x.TriggerID != 0 {
			taken[k] = true // a twin later in the batch is a duplicate too
		}
		fresh = append(fresh, x)
	}
	if len(fresh) == 0 {
		return dups, nil
	}
	values, args, err := executionRows(fresh)
	if err != nil {
		return nil, err
	}
	res, err := e.exec(ctx, "INSERT INTO executions ("+executionInsertCols+") VALUES "+values, args...)
	if err != nil {
		if isUniqueViolation(err) {
			return nil, fmt.Errorf("insert %d executions: a fire was inserted concurrently: %w", len(fresh), store.ErrAlreadyExists)
		}
		return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(fresh), err)
	}
	first, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(fresh), err)
	}
	for i, x := range fresh {
		x.ID = first + int64(i)
		if x.State == "" {
			x.State = store.ExecPending
		}
		if x.AlarmState == "" {
			x.AlarmState = store.AlarmNone
		}
	}
	return dups, nil
}

// ExecutionGet returns the execution id.
func (e *executor) ExecutionGet(ctx context.Context, id int64) (*store.Execution, error) {
	x, err := scanExecution(e.queryRow(ctx, "SELECT "+executionCols+" FROM executions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("execution %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get execution %d: %w", id, err)
	}
	return x, nil
}

// ExecutionList lists executions by id, ascending or descending.
func (e *executor) ExecutionList(ctx context.Context, f store.ExecutionFilter) ([]*store.Execution, error) {
	q := "SELECT " + executionCols + " FROM executions WHERE 1 = 1"
	var args []any
	if f.AfterID != 0 {
		if f.Desc {
			q += " AND id < ?"
		} else {
			q += " AND id > ?"
		}
		args = append(args, f.AfterID)
	}
	if f.JobID != 0 {
		q += " AND job_id = ?"
		args = append(args, f.JobID)
	}
	if f.State != "" {
		q += " AND state = ?"
		args = append(args, string(f.State))
	}
	if f.FiredFrom != 0 {
		q += " AND fired_at >= ?"
		args = append(args, f.FiredFrom)
	}
	if f.FiredTo != 0 {
		q += " AND fired_at < ?"
		args = append(args, f.FiredTo)
	}
	if f.Desc {
		q += " ORDER BY id DESC LIMIT ?"
	} else {
		q += " ORDER BY id LIMIT ?"
	}
	args = append(args, limitOr(f.Limit))
	xs, err := scanExecutions(e.query(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list executions: %w", err)
	}
	return xs, nil
}
