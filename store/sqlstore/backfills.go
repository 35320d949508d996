package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

const backfillCols = "id, job_id, trigger_id, from_at, to_at, max_concurrent, chunk, state, cursor_at, total, created, " +
	"created_by, created_at, updated_at"

func scanBackfill(r rowScanner) (*store.Backfill, error) {
	var b store.Backfill
	err := r.Scan(&b.ID, &b.JobID, &b.TriggerID, &b.FromAt, &b.ToAt, &b.MaxConcurrent, &b.Chunk, &b.State,
		&b.CursorAt, &b.Total, &b.Created, &b.CreatedBy, &b.CreatedAt, &b.UpdatedAt)
	return &b, err
}

func scanBackfills(rows *sql.Rows, err error) ([]*store.Backfill, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Backfill
	for rows.Next() {
		b, err := scanBackfill(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// BackfillInsert stores b, running.
func (e *executor) BackfillInsert(ctx context.Context, b *store.Backfill) error {
	now := e.cfg.now()
	b.State, b.CreatedAt, b.UpdatedAt = store.BackfillRunning, now, now
	id, err := e.insertID(ctx, "INSERT INTO backfills ("+backfillCols[len("id, "):]+") VALUES "+placeholders(13),
		b.JobID, b.TriggerID, b.FromAt, b.ToAt, b.MaxConcurrent, b.Chunk, string(b.State), b.CursorAt, b.Total,
		b.Created, b.CreatedBy, b.CreatedAt, b.UpdatedAt)
	if err != nil {
		return fmt.Errorf("sqlstore: insert backfill of job %d: %w", b.JobID, err)
	}
	b.ID = id
	return nil
}

// BackfillGet returns the backfill, or store.ErrNotFound.
func (e *executor) BackfillGet(ctx context.Context, id int64) (*store.Backfill, error) {
	b, err := scanBackfill(e.queryRow(ctx, "SELECT "+backfillCols+" FROM backfills WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("backfill %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get backfill %d: %w", id, err)
	}
	return b, nil
}

// BackfillList lists backfills newest first.
func (e *executor) BackfillList(ctx context.Context, jobID int64) ([]*store.Backfill, error) {
	q, args := "SELECT "+backfillCols+" FROM backfills", []any{}
	if jobID != 0 {
		q, args = q+" WHERE job_id = ?", append(args, jobID)
	}
	bs, err := scanBackfills(e.query(ctx, q+" ORDER BY id DESC", args...))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list backfills of job %d: %w", jobID, err)
	}
	return bs, nil
}

// BackfillsLockRunning locks running backfills, skipping those held elsewhere.
func (e *executor) BackfillsLockRunning(ctx context.Context, limit int) ([]*store.Backfill, error) {
	bs, err := scanBackfills(e.query(ctx, "SELECT "+backfillCols+" FROM backfills WHERE state = 'running' ORDER BY id LIMIT ?"+
		e.d().lockSkip(), limitOr(limit)))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: lock running backfills: %w", err)
	}
	return bs, nil
}

// BackfillUpdate writes b's progress.
func (e *executor) BackfillUpdate(ctx context.Context, b *store.Backfill) error {
	b.UpdatedAt = e.cfg.now()
	res, err := e.exec(ctx, "UPDATE backfills SET state = ?, cursor_at = ?, created = ?, updated_at = ? WHERE id = ?",
		string(b.State), b.CursorAt, b.Created, b.UpdatedAt, b.ID)
	if err != nil {
		return fmt.Errorf("sqlstore: update backfill %d: %w", b.ID, err)
	}
	n, err := affected(res)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("backfill %d: %w", b.ID, store.ErrNotFound)
	}
	return nil
}

// ExecutionsLiveOfBackfill counts the backfill's live executions.
func (e *executor) ExecutionsLiveOfBackfill(ctx context.Context, backfillID int64) (int, error) {
	var n int
	if err := e.queryRow(ctx, "SELECT COUNT(*) FROM executions_live WHERE backfill_id = ? AND backfill_id <> 0", backfillID).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlstore: count live runs of backfill %d: %w", backfillID, err)
	}
	return n, nil
}

// BackfillLock returns the backfill, its row locked for the transaction.
func (e *executor) BackfillLock(ctx context.Context, id int64) (*store.Backfill, error) {
	b, err := scanBackfill(e.queryRow(ctx, "SELECT "+backfillCols+" FROM backfills WHERE id = ?"+e.d().lock(), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("backfill %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: lock backfill %d: %w", id, err)
	}
	return b, nil
}

// ExecutionsCancelPendingOfBackfill ends the backfill's pending runs as canceled at now.
func (e *executor) ExecutionsCancelPendingOfBackfill(ctx context.Context, backfillID, now int64) (int, error) {
	moved, err := e.moveToHistory(ctx, nil, "backfill_id = ? AND backfill_id <> 0 AND state = 'pending'", []any{backfillID}, func(x *store.Execution) {
		x.State, x.FinishedAt, x.HandleMsg = store.ExecCanceled, now, "canceled: its backfill was canceled"
	})
	return len(moved), err
}
