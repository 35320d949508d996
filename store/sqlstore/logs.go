package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/sundial-scheduler/sundial/store"
)

// ExecutionLogAppend stores lines, skipping line numbers already stored (a chunk sent twice)
// and lines past the cap, with one statement per chunk.
func (e *executor) ExecutionLogAppend(ctx context.Context, execID int64, lines []store.LogLine) (int64, error) {
	kept := make([]store.LogLine, 0, len(lines))
	for _, l := range lines {
		if l.Line >= 1 && l.Line <= e.cfg.logLineCap {
			kept = append(kept, l)
		}
	}
	pre, post := e.d().insertIgnore()
	var total int64
	for _, c := range chunks(len(kept)) {
		batch := kept[c[0]:c[1]]
		args := make([]any, 0, 4*len(batch))
		rows := make([]string, len(batch))
		for i, l := range batch {
			rows[i] = "(?, ?, ?, ?)"
			args = append(args, execID, l.Line, l.At, l.Message)
		}
		res, err := e.exec(ctx, pre+"execution_logs (execution_id, line_no, logged_at, message) VALUES "+
			strings.Join(rows, ", ")+post, args...)
		if err != nil {
			return total, fmt.Errorf("sqlstore: append %d log lines to execution %d: %w", len(batch), execID, err)
		}
		n, err := affected(res)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// ExecutionLogList returns lines after afterLine.
func (e *executor) ExecutionLogList(ctx context.Context, execID int64, afterLine int64, limit int) ([]store.LogLine, error) {
	rows, err := e.query(ctx, "SELECT line_no, logged_at, message FROM execution_logs WHERE execution_id = ? AND line_no > ?"+
		" ORDER BY line_no LIMIT ?", execID, afterLine, limitOr(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list log of execution %d: %w", execID, err)
	}
	defer rows.Close()
	var out []store.LogLine
	for rows.Next() {
		var l store.LogLine
		if err := rows.Scan(&l.Line, &l.At, &l.Message); err != nil {
			return nil, fmt.Errorf("sqlstore: list log of execution %d: %w", execID, err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
