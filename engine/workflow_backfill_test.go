package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestWorkflowBackfill backfills a workflow: a backfill of its trigger job's hourly trigger
// over six hours, at most two at once. Each fire starts a workflow run marked backfill with
// the fire's data interval and backfill, whose node executions are given that interval; the
// backfill's concurrency counts the workflow runs (the fires end at once), so no third run
// starts while two run, and it is done only once every run has ended. On every database.
func TestWorkflowBackfill(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := openStore(t, dialect)
		jobs := wfJobs(t, st, nil, "load")
		w := insertWorkflow(t, st, "hourly-load", `{"nodes":[{"name":"load","job_id":%d}]}`, "", jobs["load"].ID)
		starter := insertJob(t, st, "hourly-load-trigger", func(j *store.Job) { j.Handler = WorkflowHandler; j.Params = w.Name })
		hourly, err := schedule.ParseCron("0 0 * * * ?", time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		row := insertTrigger(t, st, starter, "hourly", hourly, utc("2026-01-01T00:00:00Z"), func(r *store.Trigger) { r.State = store.TriggerPaused })
		release := make(chan struct{})
		loading := make(chan *Fire, 16)
		var mu sync.Mutex
		var intervals []string // the ledger of node runs, outside the database
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"load": func(ctx context.Context, f *Fire) Result {
				mu.Lock()
				intervals = append(intervals, hm(f.Execution.IntervalStart)+"-"+hm(f.Execution.IntervalEnd))
				mu.Unlock()
				loading <- f
				select {
				case <-release:
				case <-ctx.Done():
				}
				return Result{}
			},
			WorkflowHandler: func(context.Context, *Fire) Result { return Result{} },
		})
		e := newEngine(t, st, rec, "node", clock.Real{}, nil)
		startEngine(t, e)
		b, err := e.CreateBackfill(ctx, BackfillRequest{TriggerID: row.ID, From: utc("2026-03-01T01:00:00Z"),
			To: utc("2026-03-01T06:00:00Z"), MaxConcurrent: 2})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "two workflow runs' nodes to start", loading, 2)
		waitFor(t, "three more backfill rounds", e.signals.backfill, 3)
		if got, _ := st.BackfillGet(ctx, b.ID); got.Created != 2 || got.State != store.BackfillRunning {
			t.Fatalf("while two workflow runs ran, with at most 2 at once: %+v", got)
		}
		if live, _ := st.WorkflowRunsLiveOfBackfill(ctx, b.ID); live != 2 {
			t.Fatalf("%d running workflow runs of the backfill, want 2", live)
		}
		close(release)
		waitBackfill(t, st, e, b.ID, store.BackfillDone)
		runs, err := st.WorkflowRunList(ctx, w.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			if r.Cause != store.CauseBackfill || r.BackfillID != b.ID || r.State != "succeeded" {
				t.Errorf("run %d: cause %s, backfill %d, %s; want a succeeded backfill run of backfill %d", r.ID, r.Cause, r.BackfillID, r.State, b.ID)
			}
			got = append(got, hm(r.IntervalStart)+"-"+hm(r.IntervalEnd))
		}
		slices.Sort(got)
		want := []string{"00:00-01:00", "01:00-02:00", "02:00-03:00", "03:00-04:00", "04:00-05:00", "05:00-06:00"}
		if !slices.Equal(got, want) {
			t.Errorf("the runs' data intervals %v, want %v", got, want)
		}
		mu.Lock()
		defer mu.Unlock()
		slices.Sort(intervals)
		if !slices.Equal(intervals, want) {
			t.Errorf("the load node ran for %v, want once for each of %v", intervals, want)
		}
	})
}
