package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sundial-scheduler/sundial/store"
)

const jobCols = "id, group_name, name, description, target_kind, handler, app, params, data, concurrency, " +
	"persist_data, requests_recovery, timeout_ms, max_retries, retry_backoff_ms, routing, alarm_targets, " +
	"child_job_ids, enabled, params_secret, alarm_policy, dispatch_timeout_ms, max_concurrent, pause_after_failures, created_at, updated_at"

// jobSelectCols adds what the job's row keeps that no insert or update of the job writes:
// script_version is ScriptVersionAdd's.
const jobSelectCols = jobCols + ", script_version, paused_by, pause_note, paused_at, consecutive_failures"

type rowScanner interface{ Scan(dest ...any) error }

func scanJob(r rowScanner) (*store.Job, error) {
	var j store.Job
	var data, alarms, children, policy string
	err := r.Scan(&j.ID, &j.Group, &j.Name, &j.Description, &j.TargetKind, &j.Handler, &j.App, &j.Params,
		&data, &j.Concurrency, &j.PersistData, &j.RequestsRecovery, &j.TimeoutMs, &j.MaxRetries,
		&j.RetryBackoffMs, &j.Routing, &alarms, &children, &j.Enabled, &j.ParamsSecret, &policy, &j.DispatchTimeoutMs, &j.MaxConcurrent, &j.PauseAfterFailures,
		&j.CreatedAt, &j.UpdatedAt, &j.ScriptVersion, &j.PausedBy, &j.PauseNote, &j.PausedAt, &j.ConsecutiveFailures)
	if err != nil {
		return nil, err
	}
	if err := decodeJSON(data, &j.Data); err != nil {
		return nil, err
	}
	if err := decodeJSON(alarms, &j.AlarmTargets); err != nil {
		return nil, err
	}
	if err := decodeJSON(children, &j.ChildJobIDs); err != nil {
		return nil, err
	}
	if err := decodeJSON(policy, &j.AlarmPolicy); err != nil {
		return nil, err
	}
	return &j, nil
}

// jobValues returns the columns after id in jobCols order, without the timestamps.
func jobValues(j *store.Job) ([]any, error) {
	data, err := encodeJSON(j.Data, len(j.Data) == 0)
	if err != nil {
		return nil, err
	}
	alarms, err := encodeJSON(j.AlarmTargets, len(j.AlarmTargets) == 0)
	if err != nil {
		return nil, err
	}
	children, err := encodeJSON(j.ChildJobIDs, len(j.ChildJobIDs) == 0)
	if err != nil {
		return nil, err
	}
	policy, err := encodeJSON(j.AlarmPolicy, j.AlarmPolicy == store.AlarmPolicy{})
	if err != nil {
		return nil, err
	}
	conc := j.Concurrency
	if conc == "" {
		conc = store.ConcurrencyAllow
	}
	return []any{j.Group, j.Name, j.Description, string(j.TargetKind), j.Handler, j.App, j.Params, data,
		string(conc), j.PersistData, j.RequestsRecovery, j.TimeoutMs, j.MaxRetries, j.RetryBackoffMs,
		j.Routing, alarms, children, j.Enabled, j.ParamsSecret, policy, j.DispatchTimeoutMs, j.MaxConcurrent, j.PauseAfterFailures}, nil
}

// JobInsert stores j and sets its ID and timestamps.
func (e *executor) JobInsert(ctx context.Context, j *store.Job) error {
	vals, err := jobValues(j)
	if err != nil {
		return err
	}
	now := e.cfg.now()
	vals = append(vals, now, now)
	id, err := e.insertID(ctx, "INSERT INTO jobs ("+jobCols[len("id, "):]+") VALUES "+placeholders(len(vals)), vals...)
	if err != nil {
		if isUniqueViolation(err) {
			return &store.ExistsError{Kind: "job", Key: j.Group + "/" + j.Name}
		}
		return fmt.Errorf("sqlstore: insert job %q/%q: %w", j.Group, j.Name, err)
	}
	j.ID, j.CreatedAt, j.UpdatedAt = id, now, now
	if j.Concurrency == "" {
		j.Concurrency = store.ConcurrencyAllow
	}
	return nil
}

// JobGet returns the job id.
func (e *executor) JobGet(ctx context.Context, id int64) (*store.Job, error) {
	j, err := scanJob(e.queryRow(ctx, "SELECT "+jobSelectCols+" FROM jobs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get job %d: %w", id, err)
	}
	return j, nil
}

// JobsGet returns the jobs with the given ids that exist, in one statement per chunk.
func (e *executor) JobsGet(ctx context.Context, ids []int64) ([]*store.Job, error) {
	var out []*store.Job
	for _, c := range chunks(len(ids)) {
		in, args := inList(ids[c[0]:c[1]])
		rows, err := e.query(ctx, "SELECT "+jobSelectCols+" FROM jobs WHERE id IN "+in, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: get %d jobs: %w", len(ids), err)
		}
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: get %d jobs: %w", len(ids), err)
			}
			out = append(out, j)
		}
		if err := errors.Join(rows.Close(), rows.Err()); err != nil {
			return nil, fmt.Errorf("sqlstore: get %d jobs: %w", len(ids), err)
		}
	}
	return out, nil
}

// JobGetByKey returns the job named group/name.
func (e *executor) JobGetByKey(ctx context.Context, group, name string) (*store.Job, error) {
	j, err := scanJob(e.queryRow(ctx, "SELECT "+jobSelectCols+" FROM jobs WHERE group_name = ? AND name = ?", group, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %q/%q: %w", group, name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get job %q/%q: %w", group, name, err)
	}
	return j, nil
}

// JobList lists jobs by id.
func (e *executor) JobList(ctx context.Context, f store.JobFilter) ([]*store.Job, error) {
	q := "SELECT " + jobSelectCols + " FROM jobs WHERE id > ?"
	args := []any{f.AfterID}
	if f.Group != "" {
		q += " AND group_name = ?"
		args = append(args, f.Group)
	}
	if f.NameContains != "" {
		q += " AND LOWER(name) LIKE ? ESCAPE '!'"
		args = append(args, "%"+likeEscape.Replace(strings.ToLower(f.NameContains))+"%")
	}
	if f.NamePrefix != "" {
		q += " AND LOWER(name) LIKE ? ESCAPE '!'"
		args = append(args, likeEscape.Replace(strings.ToLower(f.NamePrefix))+"%")
	}
	if f.App != "" {
		q += " AND app = ?"
		args = append(args, f.App)
	}
	if f.Handler != "" {
		q += " AND handler = ?"
		args = append(args, f.Handler)
	}
	if f.ParamsSecret {
		q += " AND params_secret = ?"
		args = append(args, true)
	}
	if cond, scopeArgs := scopeCond("app", f.Scope); cond != "" {
		q += cond
		args = append(args, scopeArgs...)
	}
	if f.TriggerState != "" {
		q += " AND EXISTS (SELECT 1 FROM triggers t WHERE t.job_id = jobs.id AND t.state = ?)"
		args = append(args, string(f.TriggerState))
	}
	if f.Paused {
		q += " AND EXISTS (SELECT 1 FROM triggers t WHERE t.job_id = jobs.id AND t.state = 'paused')" +
			" AND NOT EXISTS (SELECT 1 FROM triggers t WHERE t.job_id = jobs.id AND t.state = 'waiting')"
	}
	if f.Failing {
		// The job's newest ended run that ran (a skipped fire did not), one step down the
		// history's (job_id, id) index per job.
		q += " AND (SELECT x.state FROM executions x WHERE x.job_id = jobs.id AND x.state <> 'skipped'" +
			" ORDER BY x.id DESC LIMIT 1) IN ('failed', 'timed_out', 'lost')"
	}
	q += " ORDER BY id LIMIT ?"
	args = append(args, limitOr(f.Limit))
	rows, err := e.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list jobs: %w", err)
	}
	defer rows.Close()
	var out []*store.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: list jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// JobUpdate overwrites the job j.ID.
func (e *executor) JobUpdate(ctx context.Context, j *store.Job) error {
	vals, err := jobValues(j)
	if err != nil {
		return err
	}
	now := e.cfg.now()
	vals = append(vals, now, j.ID)
	res, err := e.exec(ctx, `UPDATE jobs SET group_name = ?, name = ?, description = ?, target_kind = ?, handler = ?,
		app = ?, params = ?, data = ?, concurrency = ?, persist_data = ?, requests_recovery = ?, timeout_ms = ?,
		max_retries = ?, retry_backoff_ms = ?, routing = ?, alarm_targets = ?, child_job_ids = ?, enabled = ?,
		params_secret = ?, alarm_policy = ?, dispatch_timeout_ms = ?, max_concurrent = ?, pause_after_failures = ?, updated_at = ? WHERE id = ?`, vals...)
	if err != nil {
		if isUniqueViolation(err) {
			return &store.ExistsError{Kind: "job", Key: j.Group + "/" + j.Name}
		}
		return fmt.Errorf("sqlstore: update job %d: %w", j.ID, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("job %d: %w", j.ID, store.ErrNotFound)
	}
	j.UpdatedAt = now
	return nil
}

// JobSetPause records (or, with empty values, clears) who paused the job, why and when.
func (e *executor) JobSetPause(ctx context.Context, id int64, by, note string, at int64) error {
	res, err := e.exec(ctx, "UPDATE jobs SET paused_by = ?, pause_note = ?, paused_at = ? WHERE id = ?", by, note, at, id)
	if err != nil {
		return fmt.Errorf("sqlstore: set the pause note of job %d: %w", id, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	return nil
}

// JobCountResult counts a final result: failures in a row, reset by a success.
func (e *executor) JobCountResult(ctx context.Context, id int64, failed bool) (int, error) {
	q := "UPDATE jobs SET consecutive_failures = consecutive_failures + 1 WHERE id = ?"
	if !failed {
		q = "UPDATE jobs SET consecutive_failures = 0 WHERE id = ? AND consecutive_failures <> 0"
	}
	if _, err := e.exec(ctx, q, id); err != nil {
		return 0, fmt.Errorf("sqlstore: count a result of job %d: %w", id, err)
	}
	var n int
	if err := e.queryRow(ctx, "SELECT consecutive_failures FROM jobs WHERE id = ?", id).Scan(&n); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("job %d: %w", id, store.ErrNotFound)
		}
		return 0, fmt.Errorf("sqlstore: count a result of job %d: %w", id, err)
	}
	return n, nil
}

// JobSetData replaces the job's data map.
func (e *executor) JobSetData(ctx context.Context, id int64, data map[string]any) error {
	s, err := encodeJSON(data, len(data) == 0)
	if err != nil {
		return err
	}
	res, err := e.exec(ctx, "UPDATE jobs SET data = ?, updated_at = ? WHERE id = ?", s, e.cfg.now(), id)
	if err != nil {
		return fmt.Errorf("sqlstore: set data of job %d: %w", id, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	return nil
}

// JobDelete deletes the job; the foreign key cascades to its triggers.
func (e *executor) JobDelete(ctx context.Context, id int64) error {
	return e.inTx(ctx, func(e *executor) error {
		// Fires of the job that have not started would only fail once it is gone.
		_, err := e.moveToHistory(ctx, nil, "job_id = ? AND state = 'pending'", []any{id}, func(x *store.Execution) {
			x.State, x.HandleMsg = store.ExecCanceled, "job deleted"
		})
		if err != nil {
			return fmt.Errorf("sqlstore: cancel pending executions of job %d: %w", id, err)
		}
		if _, err := e.exec(ctx, "DELETE FROM script_versions WHERE job_id = ?", id); err != nil {
			return fmt.Errorf("sqlstore: delete script versions of job %d: %w", id, err)
		}
		if _, err := e.exec(ctx, "DELETE FROM job_alarms WHERE job_id = ?", id); err != nil {
			return fmt.Errorf("sqlstore: delete the alarm state of job %d: %w", id, err)
		}
		res, err := e.exec(ctx, "DELETE FROM jobs WHERE id = ?", id)
		if err != nil {
			return fmt.Errorf("sqlstore: delete job %d: %w", id, err)
		}
		if n, err := affected(res); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("job %d: %w", id, store.ErrNotFound)
		}
		return nil
	})
}
