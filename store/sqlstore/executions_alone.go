package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

// ExecutionsMarkRunningAlone is ExecutionsMarkRunning for the fires of jobs that must not run
// on two nodes at once. In one transaction it locks the rows of the fires' jobs, so two nodes
// claiming fires of one job take turns, and then looks for the jobs' runs on other nodes
// through the live table's job index: a fire whose job runs elsewhere stays acquired and is
// returned as busy, and of several fires of one job only the first given is claimed. Runs of
// o itself do not count: keeping them apart is the node's own concurrency tracker's work,
// and its finished runs may wait in its result writer a moment before they leave the table.
// A job in limits is counted instead: its runs for other owners and the fires claimed in this
// call may number up to its limit (o's own runs are the caller's to subtract, as its tracker
// knows them, finished or not, better than this table). The runs of a job in anyOwner count
// whoever holds them, o included: its runs are on executors, which o's tracker forgets once
// they are handed over (the caller then leaves them out of its limits too).
func (e *executor) ExecutionsMarkRunningAlone(ctx context.Context, o store.Owner, ids []int64, limits map[int64]int, anyOwner map[int64]bool, firedAt int64) (won, busy []int64, err error) {
	owned, ownedArgs := ownedBy(o)
	err = e.inTx(ctx, func(e *executor) error {
		won, busy = nil, nil
		jobOf := make(map[int64]int64, len(ids))
		var jobIDs []int64
		seen := map[int64]bool{}
		for _, c := range chunks(len(ids)) {
			in, args := inList(ids[c[0]:c[1]])
			rows, err := e.query(ctx, "SELECT id, job_id FROM executions_live WHERE id IN "+in+" AND "+owned+" AND state = 'acquired'",
				append(args, ownedArgs...)...)
			pairs, err := scanPairs(rows, err)
			if err != nil {
				return err
			}
			for _, p := range pairs {
				jobOf[p[0]] = p[1]
				if !seen[p[1]] {
					seen[p[1]] = true
					jobIDs = append(jobIDs, p[1])
				}
			}
		}
		if len(jobIDs) == 0 {
			return nil
		}
		runs := map[int64]int{} // running executions of the jobs that count against their fires
		for _, c := range chunks(len(jobIDs)) {
			in, args := inList(jobIDs[c[0]:c[1]])
			// Locked in id order, so two claimers never wait on each other crosswise. A deleted
			// job has no row to lock; its fires run nothing but a failure record.
			if _, err := scanInt64s(e.query(ctx, "SELECT id FROM jobs WHERE id IN "+in+" ORDER BY id"+e.d().lock(), args...)); err != nil {
				return err
			}
			// Read after the locks (each statement sees what committed before it, under read
			// committed): a claim of another node that held them is visible here. One
			// statement counts each job's runs and, of them, o's own.
			rows, err := e.query(ctx, "SELECT job_id, COUNT(*), SUM(CASE WHEN "+owned+" THEN 1 ELSE 0 END) FROM executions_live"+
				" WHERE job_id IN "+in+" AND state = 'running' GROUP BY job_id", append(append([]any{}, ownedArgs...), args...)...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var job, all, own int64
				if err := rows.Scan(&job, &all, &own); err != nil {
					rows.Close()
					return err
				}
				if !anyOwner[job] {
					all -= own
				}
				runs[job] = int(all)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		var claim []int64
		taken := map[int64]int{}
		for _, id := range ids {
			job, ok := jobOf[id]
			limit, limited := limits[job]
			switch {
			case !ok: // not acquired by node: lost to another node, as for ExecutionsMarkRunning
			case limited && runs[job]+taken[job] >= limit:
				busy = append(busy, id)
			case !limited && (runs[job] > 0 || taken[job] > 0):
				busy = append(busy, id)
			default:
				taken[job]++
				claim = append(claim, id)
			}
		}
		if len(claim) == 0 {
			return nil
		}
		var err error
		won, err = e.ExecutionsMarkRunning(ctx, o, claim, firedAt)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sqlstore: mark %d executions running alone for %v: %w", len(ids), o, err)
	}
	return won, busy, nil
}

// scanPairs reads rows of two integers.
func scanPairs(rows *sql.Rows, err error) ([][2]int64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var p [2]int64
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
