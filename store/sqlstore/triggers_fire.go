package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/sundial-scheduler/sundial/store"
)

// TriggersLockDue locks the due waiting triggers. The literal state = 'waiting' lets
// PostgreSQL and SQLite use the partial index triggers_due_idx, whose order is the ORDER BY.
func (e *executor) TriggersLockDue(ctx context.Context, dueBefore int64, limit int) ([]*store.Trigger, error) {
	ts, err := scanTriggers(e.query(ctx, lockDueSQL+e.d().lockSkip(), dueBefore, limitOr(limit)))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: lock triggers due by %d: %w", dueBefore, err)
	}
	return ts, nil
}

const lockDueSQL = "SELECT " + triggerCols + " FROM triggers WHERE state = 'waiting' AND next_fire_at <= ?" +
	" ORDER BY next_fire_at, priority DESC LIMIT ?"

// ExplainLockDue returns the database's plan for TriggersLockDue's query (without its lock
// clause), one line per row of EXPLAIN: the scale benchmark checks that the acquisition
// reads the due index, not every stored trigger.
func (s *Store) ExplainLockDue(ctx context.Context, dueBefore int64, limit int) (string, error) {
	explain := "EXPLAIN "
	if s.cfg.dialect.kind == sqlite {
		explain = "EXPLAIN QUERY PLAN " // plain EXPLAIN is its bytecode
	}
	rows, err := s.db.QueryContext(ctx, explain+s.cfg.dialect.rebind(lockDueSQL), dueBefore, limitOr(limit))
	if err != nil {
		return "", fmt.Errorf("sqlstore: explain the due triggers' lock: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var lines []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", fmt.Errorf("sqlstore: explain the due triggers' lock: %w", err)
		}
		var parts []string
		for _, v := range vals {
			if v.Valid {
				parts = append(parts, v.String)
			}
		}
		lines = append(lines, strings.Join(parts, " "))
	}
	return strings.Join(lines, "\n"), rows.Err()
}

var triggerFireCols = []string{"id", "next_fire_at", "prev_fire_at", "times_fired", "state", "spec", "start_at", "error_message"}

// triggerFireSet is the SET list shared by the batch updates; t is the target, u the batch.
const triggerFireSet = `next_fire_at = u.next_fire_at, prev_fire_at = u.prev_fire_at, times_fired = u.times_fired,
	state = u.state, spec = CASE WHEN u.spec = '' THEN t.spec ELSE u.spec END,
	start_at = CASE WHEN u.start_at = 0 THEN t.start_at ELSE u.start_at END,
	error_message = u.error_message, version = t.version + 1, updated_at = ?`

// TriggersUpdateAfterFire advances a batch of triggers with one statement per chunk.
func (e *executor) TriggersUpdateAfterFire(ctx context.Context, us []store.TriggerFireUpdate) (int64, error) {
	if len(us) == 0 {
		return 0, nil
	}
	now := e.cfg.now()
	if e.d().kind == postgres {
		// One statement with a fixed text for any batch size: arrays, not placeholders.
		ids := make([]int64, len(us))
		next, prev, times, start := make([]int64, len(us)), make([]int64, len(us)), make([]int64, len(us)), make([]int64, len(us))
		state, spec, msg := make([]string, len(us)), make([]string, len(us)), make([]string, len(us))
		for i, u := range us {
			ids[i], next[i], prev[i], times[i], start[i] = u.ID, u.NextFireAt, u.PrevFireAt, u.TimesFired, u.StartAt
			state[i], spec[i], msg[i] = string(u.State), u.Spec, u.ErrorMessage
		}
		res, err := e.exec(ctx, "UPDATE triggers AS t SET "+triggerFireSet+
			" FROM unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::bigint[], ?::text[])"+
			" AS u("+strings.Join(triggerFireCols, ", ")+") WHERE t.id = u.id",
			now, ids, next, prev, times, state, spec, start, msg)
		if err != nil {
			return 0, fmt.Errorf("sqlstore: update %d fired triggers: %w", len(us), err)
		}
		return affected(res)
	}
	var total int64
	for _, c := range chunks(len(us)) {
		batch := us[c[0]:c[1]]
		args := make([]any, 0, 1+len(batch)*len(triggerFireCols))
		for _, u := range batch {
			args = append(args, u.ID, u.NextFireAt, u.PrevFireAt, u.TimesFired, string(u.State), u.Spec, u.StartAt, u.ErrorMessage)
		}
		args = append(args, now)
		var q string
		if e.d().kind == mysqlKind {
			// STRAIGHT_JOIN drives the join from the batch and reaches each trigger by its
			// primary key. Left to the optimiser, InnoDB may scan triggers and lock every
			// row it passes, deadlocking with a node that holds other due rows.
			q = "UPDATE " + e.d().valuesTable(triggerFireCols, len(batch)) + " STRAIGHT_JOIN triggers AS t ON t.id = u.id SET " +
				qualifySet(triggerFireSet)
		} else {
			q = "WITH " + e.d().valuesTable(triggerFireCols, len(batch)) + " UPDATE triggers AS t SET " + triggerFireSet +
				" FROM u WHERE t.id = u.id"
		}
		res, err := e.exec(ctx, q, args...)
		if err != nil {
			return total, fmt.Errorf("sqlstore: update %d fired triggers: %w", len(batch), err)
		}
		n, err := affected(res)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// qualifySet prefixes the target columns of a SET list with "t.": MySQL's multi-table UPDATE
// needs them qualified where the joined batch has columns of the same name, and PostgreSQL and
// SQLite reject qualified ones.
func qualifySet(set string) string {
	parts := strings.Split(set, ",")
	for i, p := range parts {
		trimmed := strings.TrimLeft(p, " \n\t")
		if eq := strings.Index(trimmed, " = "); eq > 0 && !strings.ContainsAny(trimmed[:eq], " .()") {
			parts[i] = p[:len(p)-len(trimmed)] + "t." + trimmed
		}
	}
	return strings.Join(parts, ",")
}
