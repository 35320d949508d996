package sundial

import (
	"context"
	"fmt"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// checkChildJobs refuses child jobs that do not exist, repeat, or are the job itself (self
// is 0 for a job not stored yet), naming the offending child_job_ids[i].
func checkChildJobs(ctx context.Context, q store.Querier, self int64, j *store.Job) error {
	if len(j.ChildJobIDs) == 0 {
		return nil
	}
	found, err := q.JobsGet(ctx, j.ChildJobIDs)
	if err != nil {
		return fmt.Errorf("sundial: job %s: child jobs: %w", j.Name, err)
	}
	exists := make(map[int64]bool, len(found))
	for _, c := range found {
		exists[c.ID] = true
	}
	seen := make(map[int64]int, len(j.ChildJobIDs))
	for i, id := range j.ChildJobIDs {
		field := fmt.Sprintf("child_job_ids[%d]", i)
		var fe *schedule.FieldError
		switch first, dup := seen[id]; {
		case self != 0 && id == self:
			fe = schedule.Fieldf(field, "a job cannot be its own child job (%d)", id)
		case dup:
			fe = schedule.Fieldf(field, "job %d is also child_job_ids[%d]", id, first)
		case !exists[id]:
			fe = schedule.Fieldf(field, "no job %d", id)
		}
		if fe != nil {
			return fmt.Errorf("sundial: job %s: %w", j.Name, fe)
		}
		seen[id] = i
	}
	return nil
}
