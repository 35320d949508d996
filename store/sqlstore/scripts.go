package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

const scriptVersionCols = "id, job_id, version, script, note, created_at"

func scanScriptVersion(r rowScanner) (*store.ScriptVersion, error) {
	var v store.ScriptVersion
	if err := r.Scan(&v.ID, &v.JobID, &v.Version, &v.Script, &v.Note, &v.CreatedAt); err != nil {
		return nil, err
	}
	return &v, nil
}

// ScriptVersionAdd numbers the version after the job's newest, makes it the job's current
// version and prunes the oldest beyond the kept count, in one transaction. Two saves racing for the same number meet the unique
// key, and the loser fails with ErrConflict rather than overwriting the winner.
func (e *executor) ScriptVersionAdd(ctx context.Context, v *store.ScriptVersion) error {
	return e.inTx(ctx, func(e *executor) error {
		var newest sql.NullInt64
		if err := e.queryRow(ctx, "SELECT MAX(version) FROM script_versions WHERE job_id = ?", v.JobID).Scan(&newest); err != nil {
			return fmt.Errorf("sqlstore: newest script version of job %d: %w", v.JobID, err)
		}
		next, now := newest.Int64+1, e.cfg.now()
		id, err := e.insertID(ctx, "INSERT INTO script_versions (job_id, version, script, note, created_at) VALUES (?, ?, ?, ?, ?)",
			v.JobID, next, v.Script, v.Note, now)
		if err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("script version %d of job %d: %w", next, v.JobID, store.ErrConflict)
			}
			return fmt.Errorf("sqlstore: insert script version of job %d: %w", v.JobID, err)
		}
		// The job's current version, which marking its fires running stamps on them.
		if _, err := e.exec(ctx, "UPDATE jobs SET script_version = ? WHERE id = ?", next, v.JobID); err != nil {
			return fmt.Errorf("sqlstore: set script version %d of job %d: %w", next, v.JobID, err)
		}
		if _, err := e.exec(ctx, "DELETE FROM script_versions WHERE job_id = ? AND version <= ?",
			v.JobID, next-store.ScriptVersionsKept); err != nil {
			return fmt.Errorf("sqlstore: prune script versions of job %d: %w", v.JobID, err)
		}
		v.ID, v.Version, v.CreatedAt = id, next, now
		return nil
	})
}

// ScriptVersionList returns the job's kept versions, newest first.
func (e *executor) ScriptVersionList(ctx context.Context, jobID int64) ([]*store.ScriptVersion, error) {
	rows, err := e.query(ctx, "SELECT "+scriptVersionCols+" FROM script_versions WHERE job_id = ? ORDER BY version DESC", jobID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list script versions of job %d: %w", jobID, err)
	}
	var out []*store.ScriptVersion
	for rows.Next() {
		v, err := scanScriptVersion(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlstore: list script versions of job %d: %w", jobID, err)
		}
		out = append(out, v)
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return nil, fmt.Errorf("sqlstore: list script versions of job %d: %w", jobID, err)
	}
	return out, nil
}

// ScriptVersionGet returns one kept version of the job's script.
func (e *executor) ScriptVersionGet(ctx context.Context, jobID, version int64) (*store.ScriptVersion, error) {
	v, err := scanScriptVersion(e.queryRow(ctx, "SELECT "+scriptVersionCols+" FROM script_versions WHERE job_id = ? AND version = ?", jobID, version))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("script version %d of job %d: %w", version, jobID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get script version %d of job %d: %w", version, jobID, err)
	}
	return v, nil
}
