package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestPauseOnFailure: a job with pause after 2 failures fires every second. Its fire of 1 s
// fails, 2 s succeeds (the count starts again), 3 s and 4 s fail: the result of 4 s pauses the
// job in its own transaction, with a note, so nothing fires at 5 s or after; the alarm of the
// failure that paused it is pending (the job has a target).
func TestPauseOnFailure(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		n := newFakeNode(t, dialect, func(_ context.Context, f *Fire) Result {
			if f.Execution.ScheduledAt == ms(t0.Add(2*time.Second)) {
				return Result{}
			}
			return Result{Err: errors.New("boom")}
		})
		job := insertJob(t, n.st, "flaky", func(j *store.Job) {
			j.PauseAfterFailures, j.AlarmTargets = 2, []string{"ops@example.com"}
		})
		insertTrigger(t, n.st, job, "every", schedule.Simple{Interval: time.Second, RepeatCount: schedule.RepeatForever}, t0.Add(time.Second), nil)
		n.start()
		for i := 0; i < 4; i++ {
			n.advance(time.Second)
			n.completed(1)
			got, err := n.st.JobGet(context.Background(), job.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := []int{1, 0, 1, 2}[i]
			if got.ConsecutiveFailures != want {
				t.Fatalf("after the fire of %d s: %d failures in a row, want %d", i+1, got.ConsecutiveFailures, want)
			}
			if paused := got.PausedAt != 0; paused != (i == 3) {
				t.Fatalf("after the fire of %d s: paused at %d (%q)", i+1, got.PausedAt, got.PauseNote)
			}
		}
		n.advance(3 * time.Second)
		xs := n.executions(job)
		var at []int64
		for _, x := range xs {
			at = append(at, x.ScheduledAt)
		}
		want := []int64{ms(t0.Add(time.Second)), ms(t0.Add(2 * time.Second)), ms(t0.Add(3 * time.Second)), ms(t0.Add(4 * time.Second))}
		if !slices.Equal(at, want) {
			t.Fatalf("fires %v, want %v", fmtTimes(at), fmtTimes(want))
		}
		got, err := n.st.JobGet(context.Background(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.PausedBy != pausedByFailures || got.PausedAt != ms(t0.Add(4*time.Second)) || !strings.Contains(got.PauseNote, "2 failures in a row") {
			t.Errorf("pause: by %q at %d note %q", got.PausedBy, got.PausedAt, got.PauseNote)
		}
		if last := xs[3]; last.AlarmState != store.AlarmPending {
			t.Errorf("the failure that paused the job has alarm %s, want pending", last.AlarmState)
		}
		trs, err := n.st.TriggerList(context.Background(), store.TriggerFilter{JobID: job.ID})
		if err != nil || len(trs) != 1 || trs[0].State != store.TriggerPaused {
			t.Fatalf("triggers %v, %v: want the one paused", trs, err)
		}
	})
}
