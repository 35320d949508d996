package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sundial-scheduler/sundial/store"
)

const subtaskCols = "id, execution_id, job_id, handler, parent_id, depth, seq, payload, state, attempt, max_attempts, owner, result, message, created_at, claimed_at, finished_at"

const subtaskMapCols = "execution_id, job_id, handler, state, owner, total, created_at, updated_at"

func scanSubtask(r rowScanner) (*store.Subtask, error) {
	var s store.Subtask
	err := r.Scan(&s.ID, &s.ExecutionID, &s.JobID, &s.Handler, &s.ParentID, &s.Depth, &s.Seq, &s.Payload, &s.State,
		&s.Attempt, &s.MaxAttempts, &s.Owner, &s.Result, &s.Message, &s.CreatedAt, &s.ClaimedAt, &s.FinishedAt)
	return &s, err
}

func scanSubtaskMap(r rowScanner) (*store.SubtaskMap, error) {
	var m store.SubtaskMap
	err := r.Scan(&m.ExecutionID, &m.JobID, &m.Handler, &m.State, &m.Owner, &m.Total, &m.CreatedAt, &m.UpdatedAt)
	return &m, err
}

// SubtasksMap inserts the map row once and the sub-tasks maxBatchRows to a statement; the
// map row, locked first, orders concurrent maps of one execution (recursive sub-tasks).
func (e *executor) SubtasksMap(ctx context.Context, m *store.SubtaskMap, ts []*store.Subtask, maxTotal int64) (int, error) {
	inserted := 0
	// The first maps of one execution at once deadlock on MySQL/MariaDB (each insert of the
	// map's row takes a shared lock on the key, then each wants it exclusive); the database
	// rolls one back, and it runs again, whole.
	err := e.retryDeadlock(ctx, func(e *executor) error {
		inserted = 0
		ts := ts // a run again starts from every sub-task
		now, err := e.DBNow(ctx)
		if err != nil {
			return err
		}
		pre, suf := e.d().insertIgnore()
		if _, err := e.exec(ctx, pre+"subtask_maps ("+subtaskMapCols+") VALUES (?, ?, ?, ?, '', 0, ?, ?)"+suf,
			m.ExecutionID, m.JobID, m.Handler, store.MapWaiting, now, now); err != nil {
			return err
		}
		cur, err := one(scanSubtaskMap(e.queryRow(ctx, "SELECT "+subtaskMapCols+" FROM subtask_maps WHERE execution_id = ?"+e.d().lock(), m.ExecutionID)))(
			fmt.Sprintf("map of execution %d", m.ExecutionID))
		if err != nil {
			return err
		}
		if cur.State != store.MapWaiting {
			return fmt.Errorf("map of execution %d is %s: %w", m.ExecutionID, cur.State, store.ErrConflict)
		}
		if e.d().kind == postgres {
			// Arrays: one statement text and a few parameters for any chunk size.
			const chunk = 10000
			for start := 0; start < len(ts); start += chunk {
				part := ts[start:min(start+chunk, len(ts))]
				k := len(part)
				parents, depths, seqs, maxes, payloads := make([]int64, k), make([]int64, k), make([]int64, k), make([]int64, k), make([]string, k)
				for i, t := range part {
					parents[i], depths[i], seqs[i], maxes[i], payloads[i] = t.ParentID, int64(t.Depth), int64(t.Seq), int64(max(t.MaxAttempts, 1)), t.Payload
				}
				res, err := e.exec(ctx, "INSERT INTO subtasks (execution_id, job_id, handler, parent_id, depth, seq, payload, state, attempt, max_attempts, owner, result, created_at)"+
					" SELECT ?, ?, ?, u.parent_id, u.depth, u.seq, u.payload, ?, 0, u.max_attempts, '', '', ?"+
					" FROM unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::text[], ?::bigint[]) AS u(parent_id, depth, seq, payload, max_attempts)"+
					" ON CONFLICT DO NOTHING",
					m.ExecutionID, m.JobID, m.Handler, store.SubtaskPending, now, parents, depths, seqs, payloads, maxes)
				if err != nil {
					return err
				}
				n, err := affected(res)
				if err != nil {
					return err
				}
				inserted += int(n)
			}
			ts = nil
		}
		const cols = 13
		for start := 0; start < len(ts); start += maxBatchRows {
			chunk := ts[start:min(start+maxBatchRows, len(ts))]
			var b strings.Builder
			b.WriteString(pre + "subtasks (execution_id, job_id, handler, parent_id, depth, seq, payload, state, attempt, max_attempts, owner, result, created_at) VALUES ")
			args := make([]any, 0, len(chunk)*cols)
			row := placeholders(cols)
			for i, t := range chunk {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(row)
				args = append(args, m.ExecutionID, m.JobID, m.Handler, t.ParentID, t.Depth, t.Seq, t.Payload, store.SubtaskPending, 0,
					max(t.MaxAttempts, 1), "", "", now)
			}
			b.WriteString(suf)
			res, err := e.exec(ctx, b.String(), args...)
			if err != nil {
				return err
			}
			n, err := affected(res)
			if err != nil {
				return err
			}
			inserted += int(n)
		}
		if maxTotal > 0 && cur.Total+int64(inserted) > maxTotal {
			return fmt.Errorf("map of execution %d: %d sub-tasks and %d more pass the limit of %d: %w",
				m.ExecutionID, cur.Total, inserted, maxTotal, store.ErrLimit)
		}
		_, err = e.exec(ctx, "UPDATE subtask_maps SET total = total + ?, updated_at = ? WHERE execution_id = ?", inserted, now, m.ExecutionID)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrLimit) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			return 0, err
		}
		return 0, fmt.Errorf("sqlstore: map %d sub-tasks of execution %d: %w", len(ts), m.ExecutionID, err)
	}
	return inserted, nil
}

// skipClaim is a claim of rows by state: those matching where (from table, with the
// rows' state and handler in it) move from state from to state to under owner, with set
// for any further columns and stamp given the database clock.
type skipClaim struct {
	table, from, key, cols string
	where                  string
	whereArgs              []any
	set, stamp             string
	fromState, toState     string
	owner                  string
	limit                  int
}

// claimSkipLocked locks the claimable rows skipping those another claim holds, so claimers
// on many nodes never wait on each other, moves them and reads them back ordered by key.
// PostgreSQL does it in one statement (UPDATE ... RETURNING); MySQL has no RETURNING and
// SQLite takes no row locks, so there the ids are selected, updated and read back by owner
// in one transaction.
func claimSkipLocked[T any](ctx context.Context, e *executor, c skipClaim, scan func(rowScanner) (*T, error), key func(*T) int64) ([]*T, error) {
	var out []*T
	err := e.inTx(ctx, func(e *executor) error {
		sel := "SELECT " + c.key + " FROM " + c.from + " WHERE " + c.where + " ORDER BY " + c.key + " LIMIT ?" + e.d().lockSkip()
		selArgs := append(slices.Clone(c.whereArgs), c.limit)
		set := "UPDATE " + c.table + " SET state = ?, owner = ?, " + c.stamp + " = " + e.d().nowMillis()
		if c.set != "" {
			set += ", " + c.set
		}
		if e.d().kind == postgres {
			rows, err := e.query(ctx, set+" WHERE "+c.key+" IN ("+sel+") RETURNING "+c.cols,
				append([]any{c.toState, c.owner}, selArgs...)...)
			if err != nil {
				return err
			}
			if out, err = scanAll(rows, scan, c.table); err != nil {
				return err
			}
			slices.SortFunc(out, func(a, b *T) int { return cmp.Compare(key(a), key(b)) })
			return nil
		}
		ids, err := scanInt64s(e.query(ctx, sel, selArgs...))
		if err != nil || len(ids) == 0 {
			return err
		}
		il, iargs := inList(ids)
		if _, err := e.exec(ctx, set+" WHERE state = ? AND "+c.key+" IN "+il,
			append([]any{c.toState, c.owner, c.fromState}, iargs...)...); err != nil {
			return err
		}
		rows, err := e.query(ctx, "SELECT "+c.cols+" FROM "+c.table+" WHERE state = ? AND owner = ? AND "+c.key+" IN "+il+" ORDER BY "+c.key,
			append([]any{c.toState, c.owner}, iargs...)...)
		if err != nil {
			return err
		}
		out, err = scanAll(rows, scan, c.table)
		return err
	})
	return out, err
}

// SubtasksClaim claims pending sub-tasks of the given handlers, each claim an attempt.
func (e *executor) SubtasksClaim(ctx context.Context, owner string, handlers []string, limit int) ([]*store.Subtask, error) {
	if len(handlers) == 0 || limit <= 0 {
		return nil, nil
	}
	hl, hargs := inList(handlers)
	out, err := claimSkipLocked(ctx, e, skipClaim{
		table: "subtasks", from: "subtasks", key: "id", cols: subtaskCols,
		where: "state = ? AND handler IN " + hl, whereArgs: append([]any{store.SubtaskPending}, hargs...),
		set: "attempt = attempt + 1", stamp: "claimed_at",
		fromState: store.SubtaskPending, toState: store.SubtaskRunning, owner: owner, limit: limit,
	}, scanSubtask, func(s *store.Subtask) int64 { return s.ID })
	if err != nil {
		return nil, fmt.Errorf("sqlstore: claim sub-tasks of %v for %s: %w", handlers, owner, err)
	}
	return out, nil
}

// subtaskResultCols are the columns of a batch of results joined into the update.
var subtaskResultCols = []string{"id", "attempt", "owner", "st", "result", "message"}

// subtaskResultSet is the update a result makes: a failure with attempts left goes back to
// pending for the next claim.
const subtaskResultSet = "state = CASE WHEN u.st = 'failed' AND t.attempt < t.max_attempts THEN 'pending' ELSE u.st END," +
	" result = u.result, message = u.message, finished_at = "

// SubtasksComplete writes a batch of results with one statement on PostgreSQL (arrays) and
// SQLite (a VALUES table) per chunk, each row a compare-and-set on state, attempt and owner.
// MySQL's multi-table UPDATE returns no rows, so there each result is its own statement, all
// in one transaction.
func (e *executor) SubtasksComplete(ctx context.Context, rs []store.SubtaskResult) ([]int64, error) {
	for _, r := range rs {
		if r.State != store.SubtaskSucceeded && r.State != store.SubtaskFailed {
			return nil, fmt.Errorf("sqlstore: sub-task %d: state %q is not a result", r.ID, r.State)
		}
	}
	var done []int64
	err := e.retryDeadlock(ctx, func(e *executor) error {
		done = done[:0]
		now, err := e.DBNow(ctx)
		if err != nil {
			return err
		}
		switch e.d().kind {
		case postgres:
			n := len(rs)
			ids, attempts := make([]int64, n), make([]int64, n)
			owners, states, results, msgs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			for i, r := range rs {
				ids[i], attempts[i], owners[i], states[i], results[i], msgs[i] = r.ID, int64(r.Attempt), r.Owner, r.State, r.Result, truncate(r.Message, 2000)
			}
			done, err = scanInt64s(e.query(ctx, "UPDATE subtasks AS t SET "+subtaskResultSet+"?"+
				" FROM unnest(?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::text[]) AS u("+strings.Join(subtaskResultCols, ", ")+")"+
				" WHERE t.id = u.id AND t.state = 'running' AND t.attempt = u.attempt AND t.owner = u.owner RETURNING t.id",
				now, ids, attempts, owners, states, results, msgs))
			return err
		case sqlite:
			for _, c := range chunks(len(rs)) {
				args := make([]any, 0, (c[1]-c[0])*len(subtaskResultCols)+1)
				for _, r := range rs[c[0]:c[1]] {
					args = append(args, r.ID, r.Attempt, r.Owner, r.State, r.Result, truncate(r.Message, 2000))
				}
				got, err := scanInt64s(e.query(ctx, "WITH "+e.d().valuesTable(subtaskResultCols, c[1]-c[0])+
					" UPDATE subtasks AS t SET "+subtaskResultSet+"? FROM u"+
					" WHERE t.id = u.id AND t.state = 'running' AND t.attempt = u.attempt AND t.owner = u.owner RETURNING id",
					append(args, now)...))
				if err != nil {
					return err
				}
				done = append(done, got...)
			}
			return nil
		}
		for _, r := range rs {
			set := "state = '" + store.SubtaskSucceeded + "'"
			if r.State == store.SubtaskFailed {
				set = "state = CASE WHEN attempt < max_attempts THEN '" + store.SubtaskPending + "' ELSE '" + store.SubtaskFailed + "' END"
			}
			res, err := e.exec(ctx, "UPDATE subtasks SET "+set+", result = ?, message = ?, finished_at = ? WHERE id = ? AND state = ? AND attempt = ? AND owner = ?",
				r.Result, truncate(r.Message, 2000), now, r.ID, store.SubtaskRunning, r.Attempt, r.Owner)
			if err != nil {
				return err
			}
			if n, err := affected(res); err != nil {
				return err
			} else if n == 1 {
				done = append(done, r.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: complete %d sub-tasks: %w", len(rs), err)
	}
	return done, nil
}

func (e *executor) SubtasksRelease(ctx context.Context, owners []string) (int64, error) {
	if len(owners) == 0 {
		return 0, nil
	}
	var n int64
	err := e.inTx(ctx, func(e *executor) error {
		ol, oargs := inList(owners)
		res, err := e.exec(ctx, "UPDATE subtasks SET state = ?, owner = '' WHERE state = ? AND owner IN "+ol,
			append([]any{store.SubtaskPending, store.SubtaskRunning}, oargs...)...)
		if err != nil {
			return err
		}
		if n, err = affected(res); err != nil {
			return err
		}
		_, err = e.exec(ctx, "UPDATE subtask_maps SET state = ?, owner = '' WHERE state = ? AND owner IN "+ol,
			append([]any{store.MapWaiting, store.MapReducing}, oargs...)...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: release sub-tasks of %v: %w", owners, err)
	}
	return n, nil
}

func (e *executor) SubtaskOwners(ctx context.Context, prefix string) ([]string, error) {
	// The claim index leads with the state; the owners are few (one per runner process).
	like := likeEscape.Replace(prefix) + "%"
	rows, err := e.query(ctx, "SELECT DISTINCT owner FROM subtasks WHERE state = ? AND owner LIKE ? ESCAPE '!'"+
		" UNION SELECT DISTINCT owner FROM subtask_maps WHERE state = ? AND owner LIKE ? ESCAPE '!' ORDER BY 1",
		store.SubtaskRunning, like, store.MapReducing, like)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: owners of sub-tasks %q…: %w", prefix, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, fmt.Errorf("sqlstore: owners of sub-tasks %q…: %w", prefix, err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// SubtaskMapsClaimReady claims waiting maps none of whose sub-tasks is left to run, to reduce.
func (e *executor) SubtaskMapsClaimReady(ctx context.Context, owner string, handlers []string, limit int) ([]*store.SubtaskMap, error) {
	if len(handlers) == 0 || limit <= 0 {
		return nil, nil
	}
	hl, hargs := inList(handlers)
	out, err := claimSkipLocked(ctx, e, skipClaim{
		table: "subtask_maps", from: "subtask_maps m", key: "execution_id", cols: subtaskMapCols,
		where: "state = ? AND handler IN " + hl +
			" AND NOT EXISTS (SELECT 1 FROM subtasks s WHERE s.execution_id = m.execution_id AND s.state IN (?, ?))",
		whereArgs: append(append([]any{store.MapWaiting}, hargs...), store.SubtaskPending, store.SubtaskRunning),
		stamp:     "updated_at",
		fromState: store.MapWaiting, toState: store.MapReducing, owner: owner, limit: limit,
	}, scanSubtaskMap, func(m *store.SubtaskMap) int64 { return m.ExecutionID })
	if err != nil {
		return nil, fmt.Errorf("sqlstore: claim ready maps of %v for %s: %w", handlers, owner, err)
	}
	return out, nil
}

func (e *executor) SubtaskMapEnd(ctx context.Context, executionID int64, owner string) (bool, error) {
	now := e.cfg.now()
	res, err := e.exec(ctx, "UPDATE subtask_maps SET state = ?, updated_at = ? WHERE execution_id = ? AND state = ? AND owner = ?",
		store.MapDone, now, executionID, store.MapReducing, owner)
	if err != nil {
		return false, fmt.Errorf("sqlstore: end map of execution %d: %w", executionID, err)
	}
	n, err := affected(res)
	return n == 1, err
}

func (e *executor) SubtaskMapGet(ctx context.Context, executionID int64) (*store.SubtaskMap, error) {
	return one(scanSubtaskMap(e.queryRow(ctx, "SELECT "+subtaskMapCols+" FROM subtask_maps WHERE execution_id = ?", executionID)))(
		fmt.Sprintf("map of execution %d", executionID))
}

func (e *executor) SubtaskCounts(ctx context.Context, executionID int64) (map[string]int64, error) {
	rows, err := e.query(ctx, "SELECT state, COUNT(*) FROM subtasks WHERE execution_id = ? GROUP BY state", executionID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: count sub-tasks of execution %d: %w", executionID, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}

func (e *executor) SubtasksList(ctx context.Context, f store.SubtaskFilter) ([]*store.Subtask, error) {
	q := "SELECT " + subtaskCols + " FROM subtasks WHERE execution_id = ? AND id > ?"
	args := []any{f.ExecutionID, f.AfterID}
	if f.State != "" {
		q += " AND state = ?"
		args = append(args, f.State)
	}
	rows, err := e.query(ctx, q+" ORDER BY id LIMIT ?", append(args, limitOr(f.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list sub-tasks of execution %d: %w", f.ExecutionID, err)
	}
	return scanAll(rows, scanSubtask, "sub-tasks")
}
