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
	n, err := e.ExecutionLogsAppend(ctx, []store.ExecutionLines{{ExecutionID: execID, Lines: lines}})
	if err != nil {
		return n, fmt.Errorf("sqlstore: append %d log lines to execution %d: %w", len(lines), execID, err)
	}
	return n, nil
}

// ExecutionLogsAppend stores the lines of several executions, one statement per chunk of
// rows, skipping as ExecutionLogAppend does.
func (e *executor) ExecutionLogsAppend(ctx context.Context, batch []store.ExecutionLines) (int64, error) {
	type row struct {
		id int64
		l  store.LogLine
	}
	var kept []row
	for _, b := range batch {
		for _, l := range b.Lines {
			if l.Line >= 1 && l.Line <= e.cfg.logLineCap {
				kept = append(kept, row{b.ExecutionID, l})
			}
		}
	}
	pre, post := e.d().insertIgnore()
	var total int64
	for _, c := range chunks(len(kept)) {
		rows := kept[c[0]:c[1]]
		args := make([]any, 0, 4*len(rows))
		values := make([]string, len(rows))
		for i, r := range rows {
			values[i] = "(?, ?, ?, ?)"
			args = append(args, r.id, r.l.Line, r.l.At, r.l.Message)
		}
		res, err := e.exec(ctx, pre+"execution_logs (execution_id, line_no, logged_at, message) VALUES "+
			strings.Join(values, ", ")+post, args...)
		if err != nil {
			return total, fmt.Errorf("sqlstore: append %d log lines of %d executions: %w", len(rows), len(batch), err)
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
