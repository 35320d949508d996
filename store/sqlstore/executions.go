package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

const executionCols = "id, job_id, trigger_id, scheduled_at, fired_at, cause, attempt, node, executor_address, " +
	"shard_index, shard_total, state, trigger_code, trigger_msg, handle_code, handle_msg, started_at, finished_at, " +
	"alarm_state, data, incarnation, script_version, params, executor_app, output_lost, interval_start, interval_end, backfill_id, workflow_node, fire_zone"

// executionInsertCols is executionCols without id.
const executionInsertCols = "job_id, trigger_id, scheduled_at, fired_at, cause, attempt, node, executor_address, " +
	"shard_index, shard_total, state, trigger_code, trigger_msg, handle_code, handle_msg, started_at, finished_at, " +
	"alarm_state, data, incarnation, script_version, params, executor_app, output_lost, interval_start, interval_end, backfill_id, workflow_node, fire_zone"

var executionInsertColList = strings.Split(executionInsertCols, ", ")

func scanExecution(r rowScanner) (*store.Execution, error) {
	var x store.Execution
	var trig sql.NullInt64
	var data string
	err := r.Scan(&x.ID, &x.JobID, &trig, &x.ScheduledAt, &x.FiredAt, &x.Cause, &x.Attempt, &x.Node,
		&x.ExecutorAddress, &x.ShardIndex, &x.ShardTotal, &x.State, &x.TriggerCode, &x.TriggerMsg,
		&x.HandleCode, &x.HandleMsg, &x.StartedAt, &x.FinishedAt, &x.AlarmState, &data, &x.Incarnation,
		&x.ScriptVersion, &x.Params, &x.ExecutorApp, &x.OutputLost, &x.IntervalStart, &x.IntervalEnd, &x.BackfillID, &x.WorkflowNode, &x.FireZone)
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

// ExecutionsInsert inserts es into the live table with one statement per chunk, skipping
// duplicates; those inserted in a terminal state (skipped, canceled) move on to the history.
func (e *executor) ExecutionsInsert(ctx context.Context, es []*store.Execution) ([]*store.Execution, error) {
	anyEnded := false
	for _, x := range es {
		if x.State == "" {
			x.State = store.ExecPending
		}
		if x.State == store.ExecPending {
			// A pending execution belongs to no node: executions_live_pending_idx is on node = ''.
			x.Node, x.Incarnation = "", ""
		}
		if x.AlarmState == "" {
			x.AlarmState = store.AlarmNone
		}
		anyEnded = anyEnded || x.State.Terminal()
	}
	if !anyEnded {
		return e.insertLive(ctx, es)
	}
	// The insert and the move to the history commit together: an ended execution must never
	// be left behind in the live table.
	var dups []*store.Execution
	err := e.inTx(ctx, func(e *executor) error {
		var err error
		if dups, err = e.insertLive(ctx, es); err != nil {
			return err
		}
		var ids []int64
		for _, x := range es {
			if x.ID != 0 && x.State.Terminal() {
				ids = append(ids, x.ID)
			}
		}
		if len(ids) == 0 {
			return nil // every ended one was a duplicate
		}
		_, err = e.moveToHistory(ctx, ids, "", nil, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return dups, nil
}

// insertLive inserts es into the live table, one statement per chunk, leaving out rows whose
// fire already ended (a twin in the history).
//
// A probe of the history inside the insert reads the history as it was when the statement
// began. A twin whose fire ends meanwhile — its row moved from the live table to the history
// by a transaction that commits during the insert — is missed by it, and the live table's
// key, freed by the move, lets the twin in (PostgreSQL waits for the move on that key, then
// inserts). So on PostgreSQL and MySQL the inserted rows are probed in a second statement, in
// the same transaction: once the insert has returned, every move that freed one of its keys
// has committed, and the second statement sees it. Twins found then are deleted before the
// transaction commits, and reported as duplicates like the others. On PostgreSQL that probe
// is the only one (it finds what a probe in the insert would); SQLite, with one writer,
// needs only the probe in the insert.
func (e *executor) insertLive(ctx context.Context, es []*store.Execution) ([]*store.Execution, error) {
	keyed := false
	for _, x := range es {
		keyed = keyed || x.TriggerID != 0
	}
	var dups []*store.Execution
	insert := func(e *executor) error {
		dups = nil
		for _, c := range chunks(len(es)) {
			d, err := e.insertExecutions(ctx, es[c[0]:c[1]])
			if err != nil {
				return err
			}
			dups = append(dups, d...)
		}
		if !keyed || e.d().kind == sqlite {
			// SQLite has one writer: no move to the history can commit during the
			// insert, so its probe saw every twin.
			return nil
		}
		late, err := e.dropEndedTwins(ctx, es)
		dups = append(dups, late...)
		return err
	}
	if !keyed {
		return dups, insert(e) // rows without a trigger have no twin: one statement, no transaction
	}
	if err := e.inTx(ctx, insert); err != nil {
		return nil, err
	}
	return dups, nil
}

// dropEndedTwins deletes the rows of es just inserted whose fire has a twin in the history
// (see insertLive), and returns them, their ids cleared.
func (e *executor) dropEndedTwins(ctx context.Context, es []*store.Execution) ([]*store.Execution, error) {
	var ids []int64
	for _, x := range es {
		if x.ID != 0 && x.TriggerID != 0 {
			ids = append(ids, x.ID)
		}
	}
	twin := map[int64]bool{}
	for _, c := range chunks(len(ids)) {
		var found []int64
		var err error
		if e.d().kind == postgres {
			// One array, not a placeholder per row: a fixed statement text, prepared once.
			found, err = scanInt64s(e.query(ctx, "SELECT u.id FROM executions_live u WHERE u.id = ANY(?::bigint[]) AND "+e.d().endedTwin(), ids[c[0]:c[1]]))
		} else {
			in, args := inList(ids[c[0]:c[1]])
			found, err = scanInt64s(e.query(ctx, "SELECT u.id FROM executions_live u WHERE u.id IN "+in+" AND "+e.d().endedTwin(), args...))
		}
		if err != nil {
			return nil, fmt.Errorf("sqlstore: probe %d inserted executions for ended twins: %w", len(ids), err)
		}
		if len(found) == 0 {
			continue
		}
		fin, fargs := inList(found)
		if _, err := e.exec(ctx, "DELETE FROM executions_live WHERE id IN "+fin, fargs...); err != nil {
			return nil, fmt.Errorf("sqlstore: delete %d twins of ended fires: %w", len(found), err)
		}
		for _, id := range found {
			twin[id] = true
		}
	}
	var dups []*store.Execution
	for _, x := range es {
		if twin[x.ID] {
			x.ID = 0
			dups = append(dups, x)
		}
	}
	return dups, nil
}

// executionRows returns the columns, VALUES list and arguments inserting es (ids first when
// withID). A column is left out when every row holds its default (executionDefault), and the
// database fills it in: most of an execution's columns are empty when it is inserted, and on
// SQLite and MySQL, which are sent a placeholder per value, parsing the statement costs more
// than the rows it inserts.
func executionRows(d *dialect, es []*store.Execution, withID bool) (cols []string, values string, args []any, err error) {
	all := executionInsertColList
	if withID {
		all = append([]string{"id"}, all...)
	}
	rows := make([][]any, len(es))
	keep := make([]bool, len(all))
	for i, x := range es {
		if rows[i], err = appendExecutionArgs(make([]any, 0, len(all)), x, withID); err != nil {
			return nil, "", nil, err
		}
		for c, v := range rows[i] {
			keep[c] = keep[c] || !executionDefault(d, all[c], v)
		}
	}
	for c, k := range keep {
		if k {
			cols = append(cols, all[c])
		}
	}
	args = make([]any, 0, len(es)*len(cols))
	for _, r := range rows {
		for c, v := range r {
			if keep[c] {
				args = append(args, v)
			}
		}
	}
	row := placeholders(len(cols))
	b := make([]byte, 0, len(es)*(len(row)+2))
	for i := range es {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, row...)
	}
	return cols, string(b), args, nil
}

// executionDefault reports whether v is what the database puts in column col of an execution
// when an insert leaves it out. The columns without a default, and those the twin probe reads
// from the inserted rows (endedTwin), are never left out; nor, on MySQL, the TEXT columns,
// which it cannot give a default.
func executionDefault(d *dialect, col string, v any) bool {
	switch col {
	case "id", "job_id", "trigger_id", "scheduled_at", "cause", "state", "attempt", "shard_index":
		return false
	case "trigger_msg", "handle_msg", "data", "params":
		if d.kind == mysqlKind {
			return false
		}
	}
	switch v := v.(type) {
	case string:
		return v == "" || (col == "alarm_state" && v == string(store.AlarmNone))
	case int64:
		return v == 0
	case int:
		return v == 0
	}
	return false
}

// appendExecutionArgs appends x's values in executionInsertCols order (its id first when
// withID) to args.
func appendExecutionArgs(args []any, x *store.Execution, withID bool) ([]any, error) {
	data, err := encodeJSON(x.Data, x.Data == nil)
	if err != nil {
		return nil, err
	}
	if withID {
		args = append(args, x.ID)
	}
	return append(args, x.JobID, nullInt64(x.TriggerID), x.ScheduledAt, x.FiredAt, string(x.Cause), x.Attempt,
		x.Node, x.ExecutorAddress, x.ShardIndex, x.ShardTotal, string(x.State), x.TriggerCode, x.TriggerMsg,
		x.HandleCode, x.HandleMsg, x.StartedAt, x.FinishedAt, string(x.AlarmState), data, x.Incarnation,
		x.ScriptVersion, x.Params, x.ExecutorApp, x.OutputLost, x.IntervalStart, x.IntervalEnd, x.BackfillID, x.WorkflowNode, x.FireZone), nil
}

// executionUnnest returns what inserts es on PostgreSQL with one array per column, for a
// statement text that does not grow with the batch: the columns (those executionRows keeps),
// the select list reading them from u (trigger 0 is NULL), the FROM clause and the arrays.
func executionUnnest(d *dialect, es []*store.Execution, withID bool) (cols []string, sel, from string, arrays []any, err error) {
	cols, _, args, err := executionRows(d, es, withID)
	if err != nil {
		return nil, "", "", nil, err
	}
	n := len(cols)
	exprs, types := make([]string, n), make([]string, n)
	arrays = make([]any, n)
	for c, col := range cols {
		exprs[c] = "u." + col
		if col == "trigger_id" {
			exprs[c] = "NULLIF(u.trigger_id, 0)"
		}
		if executionTextCols[col] {
			a := make([]string, len(es))
			for r := range es {
				a[r], _ = args[r*n+c].(string)
			}
			arrays[c], types[c] = a, "?::text[]"
			continue
		}
		a := make([]int64, len(es))
		for r := range es {
			switch v := args[r*n+c].(type) {
			case int64:
				a[r] = v
			case int:
				a[r] = int64(v)
			case nil: // no trigger
			default:
				return nil, "", "", nil, fmt.Errorf("sqlstore: execution column %s: unexpected %T", col, v)
			}
		}
		arrays[c], types[c] = a, "?::bigint[]"
	}
	from = "unnest(" + strings.Join(types, ", ") + ") AS u(" + strings.Join(cols, ", ") + ")"
	return cols, strings.Join(exprs, ", "), from, arrays, nil
}

// executionTextCols are the text columns of an execution; the others are integers.
var executionTextCols = map[string]bool{"cause": true, "node": true, "executor_address": true, "state": true,
	"trigger_msg": true, "handle_msg": true, "alarm_state": true, "data": true, "incarnation": true, "params": true,
	"executor_app": true, "fire_zone": true}

// Duplicate fires are refused by the live table's unique key, and a fire whose twin has
// already ended by a probe of the history's unique key (endedTwin) in the same statement: the
// trigger row lock taken by acquisition keeps a scheduled fire from being inserted twice, but
// retries, shards and recovery runs are inserted by other paths, and a twin that ran would be
// refused by the history's key only when it ended, its result then unwritable.

const insertedCols = " RETURNING id, trigger_id, scheduled_at, attempt, shard_index"

// endedTwin is the condition that row u of an insert has a twin in the history. A row
// without a trigger (NULL, or 0 before PostgreSQL's NULLIF) has none.
//
// On PostgreSQL, OFFSET 0 keeps the probe a subplan, one search of the history's unique key
// per row, where the planner would otherwise make it a join. Planned as a join against a
// history last analyzed empty (a new cluster, until autovacuum's first analyze), it read the
// whole history for every row: 4.7 s to insert 500 fires beside 100,000 ended ones (6 ms
// as a subplan), and a backlog's drain grew with the square of its size.
func (d *dialect) endedTwin() string {
	fence := ""
	if d.kind == postgres {
		fence = " OFFSET 0"
	}
	return "EXISTS (SELECT 1 FROM executions h WHERE h.trigger_id = u.trigger_id AND h.scheduled_at = u.scheduled_at" +
		" AND h.attempt = u.attempt AND h.shard_index = u.shard_index" + fence + ")"
}

func (e *executor) insertExecutions(ctx context.Context, es []*store.Execution) ([]*store.Execution, error) {
	if e.d().kind == mysqlKind && !e.d().returning {
		return e.insertExecutionsNoReturning(ctx, es)
	}
	// Each dialect skips rows whose fire key exists and reports the rows it inserted; the
	// caller's rows are then matched to them by fire key (rows without a trigger cannot
	// collide, and take the ids of the trigger-less rows in insertion order).
	var got []insertedExecution
	switch e.d().kind {
	case postgres:
		cols, sel, from, arrays, err := executionUnnest(e.d(), es, false)
		if err != nil {
			return nil, err
		}
		// No probe of the history here: the one insertLive runs after the insert finds every
		// twin this one would, and those that ended during the insert too. One probe per fire.
		got, err = scanInserted(e.query(ctx, "INSERT INTO executions_live ("+strings.Join(cols, ", ")+") SELECT "+sel+
			" FROM "+from+" ON CONFLICT (trigger_id, scheduled_at, attempt, shard_index) DO NOTHING"+
			insertedCols, arrays...))
		if err != nil {
			return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
		}
	case sqlite:
		cols, _, args, err := executionRows(e.d(), es, false)
		if err != nil {
			return nil, err
		}
		got, err = scanInserted(e.query(ctx, "WITH "+e.d().valuesTable(cols, len(es))+
			" INSERT INTO executions_live ("+strings.Join(cols, ", ")+") SELECT * FROM u WHERE NOT "+e.d().endedTwin()+
			" ON CONFLICT DO NOTHING"+insertedCols, args...))
		if err != nil {
			return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
		}
	default:
		cols, _, args, err := executionRows(e.d(), es, false)
		if err != nil {
			return nil, err
		}
		got, err = scanInserted(e.query(ctx, "INSERT IGNORE INTO executions_live ("+strings.Join(cols, ", ")+") SELECT * FROM "+
			e.d().valuesTable(cols, len(es))+" WHERE NOT "+e.d().endedTwin()+insertedCols, args...))
		if err != nil {
			return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
		}
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
// fires that exist (one indexed SELECT), and inserts the rest with a plain
// multi-row INSERT: an InnoDB "simple insert" (row count known in advance) takes consecutive
// ids from LAST_INSERT_ID() in every innodb_autoinc_lock_mode, so row i gets first+i. A fire
// inserted by someone else between the statements makes the INSERT fail with
// ErrAlreadyExists, never a second row.
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
		in := " WHERE (trigger_id, scheduled_at, attempt, shard_index) IN (" + strings.Join(tuples, ", ") + ")"
		rows, err := e.query(ctx, "SELECT trigger_id, scheduled_at, attempt, shard_index FROM executions_live"+in+
			" UNION ALL SELECT trigger_id, scheduled_at, attempt, shard_index FROM executions"+in, append(keys, keys...)...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
		}
		for rows.Next() {
			var k fireKey
			if err := rows.Scan(&k.trigger, &k.scheduled, &k.attempt, &k.shard); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
			}
			taken[k] = true
		}
		if err := errors.Join(rows.Close(), rows.Err()); err != nil {
			return nil, fmt.Errorf("sqlstore: insert %d executions: %w", len(es), err)
		}
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
	cols, values, args, err := executionRows(e.d(), fresh, false)
	if err != nil {
		return nil, err
	}
	res, err := e.exec(ctx, "INSERT INTO executions_live ("+strings.Join(cols, ", ")+") VALUES "+values, args...)
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
	}
	return dups, nil
}

// ExecutionGet returns the execution id. The live table is read first: an execution that
// ends between the two reads has reached the history by the second.
func (e *executor) ExecutionGet(ctx context.Context, id int64) (*store.Execution, error) {
	for _, table := range []string{"executions_live", "executions"} {
		x, err := scanExecution(e.queryRow(ctx, "SELECT "+executionCols+" FROM "+table+" WHERE id = ?", id))
		if err == nil {
			return x, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlstore: get execution %d: %w", id, err)
		}
	}
	return nil, fmt.Errorf("execution %d: %w", id, store.ErrNotFound)
}

// ExecutionsGet reads executions by id: the live table first, then the history for the rest
// (an execution that ends between the two reads has reached the history by the second).
func (e *executor) ExecutionsGet(ctx context.Context, ids []int64) ([]*store.Execution, error) {
	var out []*store.Execution
	rest := ids
	for _, table := range []string{"executions_live", "executions"} {
		var found []*store.Execution
		for _, c := range chunks(len(rest)) {
			in, args := inList(rest[c[0]:c[1]])
			xs, err := scanExecutions(e.query(ctx, "SELECT "+executionCols+" FROM "+table+" WHERE id IN "+in, args...))
			if err != nil {
				return nil, fmt.Errorf("sqlstore: get %d executions: %w", len(ids), err)
			}
			found = append(found, xs...)
		}
		out = append(out, found...)
		got := make(map[int64]bool, len(found))
		for _, x := range found {
			got[x.ID] = true
		}
		var left []int64
		for _, id := range rest {
			if !got[id] {
				left = append(left, id)
			}
		}
		rest = left
	}
	return out, nil
}

// endedNotOK are the states of the partial index executions_failed_idx (state, id), in its
// predicate's words: SQLite uses a partial index only for a query that repeats the predicate,
// so a list of one of these states says it again, and a rare state (lost, timed out) is a
// short index search instead of a scan of the whole history.
const endedNotOK = "state IN ('failed', 'timed_out', 'lost', 'canceled', 'skipped')"

// notScheduled is the predicate of the partial indexes executions_cause_idx (cause, id) and
// executions_cause_fired_idx (cause, fired_at, id): the executions not fired by a schedule, a
// small part of the history.
const notScheduled = "cause <> 'schedule'"

// ExecutionList lists executions by id, or, given a fired-time bound, by fired time then id,
// ascending or descending: the live ones and the history in one statement (one snapshot),
// each side cut to the limit first. A time range is listed in time order because ids and
// fired times rise together: walking the ids down to a day weeks back filtered every row
// since (170 ms for 1,000,000 executions on PostgreSQL), where the (fired_at, id) index starts
// at the range.
func (e *executor) ExecutionList(ctx context.Context, f store.ExecutionFilter) ([]*store.Execution, error) {
	byFired := f.FiredFrom != 0 || f.FiredTo != 0
	op, dir := ">", ""
	if f.Desc {
		op, dir = "<", " DESC"
	}
	where := " WHERE 1 = 1"
	var args []any
	switch {
	case f.AfterID != 0 && byFired:
		after, err := e.ExecutionGet(ctx, f.AfterID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, schedule.Fieldf("after", "execution %d is no longer stored (retention removed it): list from the start", f.AfterID)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlstore: list executions after %d: %w", f.AfterID, err)
		}
		// The bound on fired_at alone is the one an index range starts from; id breaks ties.
		where += " AND fired_at " + op + "= ? AND (fired_at " + op + " ? OR id " + op + " ?)"
		args = append(args, after.FiredAt, after.FiredAt, f.AfterID)
	case f.AfterID != 0:
		where += " AND id " + op + " ?"
		args = append(args, f.AfterID)
	}
	if f.JobID != 0 {
		where += " AND job_id = ?"
		args = append(args, f.JobID)
	}
	if f.App != "" {
		// The app's jobs are few beside their executions: each one's (job_id, id) index serves.
		where += " AND job_id IN (SELECT j.id FROM jobs j WHERE j.app = ?)"
		args = append(args, f.App)
	}
	if cond, scopeArgs := scopedJobsCond(f.Scope); cond != "" {
		where += cond
		args = append(args, scopeArgs...)
	}
	if f.State != "" {
		switch f.State {
		case store.ExecFailed, store.ExecTimedOut, store.ExecLost, store.ExecCanceled, store.ExecSkipped:
			// The state is written as a literal (one of these constants): a plan PostgreSQL
			// keeps for any parameter value cannot use the partial index, and scanned the
			// whole history for a rare state. SQLite also needs the index's own predicate
			// repeated; PostgreSQL, given it twice, misjudged the rows.
			where += " AND state = '" + string(f.State) + "'"
			if e.d().kind == sqlite {
				where += " AND " + endedNotOK
			}
		default:
			where += " AND state = ?"
			args = append(args, string(f.State))
		}
	}
	if f.Cause != "" {
		if !f.Cause.Valid() {
			return nil, fmt.Errorf("sqlstore: list executions: unknown cause %q", f.Cause)
		}
		// A literal, as for the states above, so that a rare cause (recovery, child) is a
		// search of the partial indexes over the causes other than schedule (by id, and by
		// fired time for a range): PostgreSQL proves from the constant that it is not
		// 'schedule'; SQLite needs the predicate said again.
		where += " AND cause = '" + string(f.Cause) + "'"
		if f.Cause != store.CauseSchedule && e.d().kind == sqlite {
			where += " AND " + notScheduled
		}
	}
	if f.ExecutorAddress != "" {
		where += " AND executor_address = ?"
		args = append(args, f.ExecutorAddress)
	}
	if f.AlarmState != "" {
		if !f.AlarmState.Valid() {
			return nil, fmt.Errorf("sqlstore: list executions: unknown alarm state %q", f.AlarmState)
		}
		// A literal, as for the ended states above: the pending and sending alarms have
		// partial indexes that a parameter would not use.
		where += " AND alarm_state = '" + string(f.AlarmState) + "'"
	}
	if byFired {
		// fired_at 0 is "not fired yet", which no range of fired times holds.
		where += " AND fired_at >= ?"
		args = append(args, max(f.FiredFrom, 1))
	}
	if f.FiredTo != 0 {
		where += " AND fired_at < ?"
		args = append(args, f.FiredTo)
	}
	order := " ORDER BY id" + dir + " LIMIT ?"
	if byFired {
		order = " ORDER BY fired_at" + dir + ", id" + dir + " LIMIT ?"
	}
	limit := limitOr(f.Limit)
	args = append(args, limit)
	part := func(table, alias string) string {
		return "SELECT " + executionCols + " FROM (SELECT " + executionCols + " FROM " + table + where + order + ") AS " + alias
	}
	var q string
	var qargs []any
	switch {
	case f.State != "" && f.State.Terminal():
		q, qargs = part("executions", "ended"), args
	case f.State != "":
		q, qargs = part("executions_live", "live"), args
	default:
		q, qargs = part("executions_live", "live")+" UNION ALL "+part("executions", "ended")+order, concat(args, args, []any{limit})
	}
	xs, err := scanExecutions(e.query(ctx, q, qargs...))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list executions: %w", err)
	}
	return xs, nil
}
