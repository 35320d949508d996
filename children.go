package sundial

import (
	"context"
	"fmt"
	"slices"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

type mayRunKey struct{}

// WithMayRun returns ctx for a caller who may run only the jobs whose app mayRun accepts (""
// is a job of no app). The scheduler refuses such a caller a child job it may not run, since
// a run of the parent fires the child as if the caller had run it. Without it the caller may
// run every job: a Go program embedding the scheduler, or an import holding the database's
// own credentials. The server sets it from the request's principal.
func WithMayRun(ctx context.Context, mayRun func(app string) bool) context.Context {
	return context.WithValue(ctx, mayRunKey{}, mayRun)
}

// mayRun is the caller's WithMayRun, or one allowing everything.
func mayRun(ctx context.Context) func(app string) bool {
	if f, ok := ctx.Value(mayRunKey{}).(func(string) bool); ok {
		return f
	}
	return func(string) bool { return true }
}

// checkChildJobs refuses child jobs that do not exist, repeat, are the job itself (self is 0
// for a job not stored yet), or that the caller may not run (WithMayRun), naming the
// offending child_job_ids[i]. kept are the children the stored job has already: they were
// allowed to whoever set them, and an edit that keeps them grants nothing new, so a scoped
// operator can still edit a job an admin chained to another app's. Children are checked
// here, when they are set, and not when they fire: a fire has no caller to check.
func checkChildJobs(ctx context.Context, q store.Querier, self int64, j *store.Job, kept []int64) error {
	if len(j.ChildJobIDs) == 0 {
		return nil
	}
	found, err := q.JobsGet(ctx, j.ChildJobIDs)
	if err != nil {
		return fmt.Errorf("sundial: job %s: child jobs: %w", j.Name, err)
	}
	app := make(map[int64]string, len(found))
	for _, c := range found {
		app[c.ID] = c.App
	}
	may := mayRun(ctx)
	seen := make(map[int64]int, len(j.ChildJobIDs))
	for i, id := range j.ChildJobIDs {
		field := fmt.Sprintf("child_job_ids[%d]", i)
		var fe *schedule.FieldError
		childApp, exists := app[id]
		switch first, dup := seen[id]; {
		case self != 0 && id == self:
			fe = schedule.Fieldf(field, "a job cannot be its own child job (%d)", id)
		case dup:
			fe = schedule.Fieldf(field, "job %d is also child_job_ids[%d]", id, first)
		case !exists:
			fe = schedule.Fieldf(field, "no job %d", id)
		case !may(childApp) && !slices.Contains(kept, id):
			fe = schedule.Fieldf(field, "job %d of app %q: %w (a child job must be one you may run)", id, childApp, store.ErrOutOfScope)
		}
		if fe != nil {
			return fmt.Errorf("sundial: job %s: %w", j.Name, fe)
		}
		seen[id] = i
	}
	return nil
}
