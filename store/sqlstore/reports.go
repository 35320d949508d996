package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

const dayLayout = "2006-01-02"

// dayBounds returns the UTC day's first millisecond and the next day's.
func dayBounds(day string) (int64, int64, error) {
	t, err := time.Parse(dayLayout, day)
	if err != nil {
		return 0, 0, fmt.Errorf("day %q: want YYYY-MM-DD: %w", day, err)
	}
	return t.UnixMilli(), t.AddDate(0, 0, 1).UnixMilli(), nil
}

var reportCols = []string{"running_count", "succeeded_count", "failed_count", "other_count", "updated_at"}

// reportCounts is the SELECT list bucketing executions by state; other is the rest of COUNT.
const reportCounts = "job_id, " +
	"SUM(CASE WHEN state IN ('pending', 'acquired', 'running') THEN 1 ELSE 0 END), " +
	"SUM(CASE WHEN state = 'succeeded' THEN 1 ELSE 0 END), " +
	"SUM(CASE WHEN state IN ('failed', 'timed_out', 'lost') THEN 1 ELSE 0 END), " +
	"COUNT(*)"

// ReportsRefresh recomputes a day in one transaction. Executions are counted by fired_at
// (the index the log views and retention use), and the live ones that have not fired yet by
// scheduled_at, so a backlog shows on the day it was due. Rows are upserted rather than
// deleted and inserted, so two leaders refreshing the same day at once both commit; the
// rows of jobs that have no executions that day any more (retention, a deleted job) go.
func (e *executor) ReportsRefresh(ctx context.Context, day string) (int, error) {
	from, to, err := dayBounds(day)
	if err != nil {
		return 0, err
	}
	var n int
	err = e.inTx(ctx, func(e *executor) error {
		rows := map[int64]*store.ReportDay{}
		var order []int64
		add := func(q string, args ...any) error {
			rs, err := e.query(ctx, q, args...)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var job, running, succeeded, failed, total int64
				if err := rs.Scan(&job, &running, &succeeded, &failed, &total); err != nil {
					return err
				}
				r := rows[job]
				if r == nil {
					r = &store.ReportDay{Day: day, JobID: job}
					rows[job] = r
					order = append(order, job)
				}
				r.Running += running
				r.Succeeded += succeeded
				r.Failed += failed
				r.Other += total - running - succeeded - failed
			}
			return rs.Err()
		}
		// max(from, 1): fired_at 0 means "not fired", counted by the second query.
		// The live table is small and has no index on fired_at: scanning it is the cheap way.
		for _, table := range []string{"executions", "executions_live"} {
			if err := add("SELECT "+reportCounts+" FROM "+table+" WHERE fired_at >= ? AND fired_at < ? GROUP BY job_id", max(from, 1), to); err != nil {
				return err
			}
		}
		if err := add("SELECT "+reportCounts+" FROM executions_live WHERE state IN ('pending', 'acquired') AND fired_at = 0"+
			" AND scheduled_at >= ? AND scheduled_at < ? GROUP BY job_id", from, to); err != nil {
			return err
		}
		now, err := e.DBNow(ctx)
		if err != nil {
			return err
		}
		n = len(order)
		if n > 0 {
			// The day's total over every job, so that the dashboard reads a row per day
			// instead of summing ten thousand (ReportsDaily).
			total := &store.ReportDay{Day: day, JobID: allJobs}
			for _, job := range order {
				r := rows[job]
				total.Running, total.Succeeded, total.Failed, total.Other = total.Running+r.Running,
					total.Succeeded+r.Succeeded, total.Failed+r.Failed, total.Other+r.Other
			}
			rows[allJobs] = total
			order = append(order, allJobs)
		}
		for _, c := range chunks(len(order)) {
			args := make([]any, 0, (c[1]-c[0])*7)
			values := ""
			for i, job := range order[c[0]:c[1]] {
				r := rows[job]
				if i > 0 {
					values += ", "
				}
				values += placeholders(7)
				args = append(args, day, job, r.Running, r.Succeeded, r.Failed, r.Other, now)
			}
			if _, err := e.exec(ctx, "INSERT INTO daily_reports (day, job_id, running_count, succeeded_count, failed_count, other_count, updated_at)"+
				" VALUES "+values+e.d().upsert("day, job_id", reportCols...), args...); err != nil {
				return err
			}
		}
		had, err := scanInt64s(e.query(ctx, "SELECT job_id FROM daily_reports WHERE day = ?", day))
		if err != nil {
			return err
		}
		var stale []int64
		for _, job := range had {
			if rows[job] == nil {
				stale = append(stale, job)
			}
		}
		for _, c := range chunks(len(stale)) {
			in, args := inList(stale[c[0]:c[1]])
			if _, err := e.exec(ctx, "DELETE FROM daily_reports WHERE day = ? AND job_id IN "+in, append([]any{day}, args...)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: refresh the report of %s: %w", day, err)
	}
	return n, nil
}

// allJobs is the job_id of a day's total row (job ids start at 1).
const allJobs = 0

// ReportsDaily reads a range of days: the days' total rows, or one job's rows, a row per day
// through the index on (job_id, day) (migration 00015). A day's total row counts every app's
// jobs, so a scoped reader's totals are summed from the rows of the jobs it may see.
func (e *executor) ReportsDaily(ctx context.Context, from, to string, jobID int64, scope []string) ([]*store.ReportDay, error) {
	for _, d := range []string{from, to} {
		if _, _, err := dayBounds(d); err != nil {
			return nil, err
		}
	}
	q := "SELECT day, running_count, succeeded_count, failed_count, other_count FROM daily_reports WHERE job_id = ?"
	args := []any{jobID}
	cond, scopeArgs := scopedJobsCond(scope)
	if cond != "" && jobID == allJobs {
		q = "SELECT day, SUM(running_count), SUM(succeeded_count), SUM(failed_count), SUM(other_count) FROM daily_reports WHERE job_id <> ?"
	}
	q += " AND day >= ? AND day <= ?" + cond
	args = append(append(args, from, to), scopeArgs...)
	if cond != "" && jobID == allJobs {
		q += " GROUP BY day"
	}
	rs, err := e.query(ctx, q+" ORDER BY day", args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: report from %s to %s: %w", from, to, err)
	}
	defer rs.Close()
	var out []*store.ReportDay
	for rs.Next() {
		r := &store.ReportDay{JobID: jobID}
		if err := rs.Scan(&r.Day, &r.Running, &r.Succeeded, &r.Failed, &r.Other); err != nil {
			return nil, fmt.Errorf("sqlstore: report from %s to %s: %w", from, to, err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: report from %s to %s: %w", from, to, err)
	}
	return out, nil
}
