package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/store"
)

// TestLoseOnExecutor: the runs on a silent executor are lost; one with a retry left is
// retried after its backoff as the same shard, one without alarms, and a run on another
// executor goes on.
func TestLoseOnExecutor(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := openStore(t, dialect)
		clk := clock.NewFake(t0)
		e := newEngine(t, st, newRecorder(), "node", clk, nil)
		final := insertJob(t, st, "final", func(j *store.Job) {
			j.TargetKind, j.App, j.AlarmTargets = store.TargetRemote, "billing", []string{"ops@example.com"}
		})
		retried := insertJob(t, st, "retried", func(j *store.Job) {
			j.TargetKind, j.App, j.MaxRetries, j.RetryBackoffMs = store.TargetRemote, "billing", 2, 1000
			j.AlarmTargets = []string{"ops@example.com"}
		})
		const dead, alive = "http://10.0.0.1:9999", "http://10.0.0.2:9999"
		mk := func(job *store.Job, address string, attempt, shard int) *store.Execution {
			return &store.Execution{JobID: job.ID, TriggerID: 7, ScheduledAt: ms(t0), FiredAt: ms(t0), Cause: store.CauseAPI,
				State: store.ExecRunning, ExecutorAddress: address, ExecutorApp: job.App, Attempt: attempt, ShardIndex: shard, ShardTotal: 3}
		}
		xf, xr, other := mk(final, dead, 0, 0), mk(retried, dead, 1, 2), mk(final, alive, 0, 1)
		if _, err := st.ExecutionsInsert(ctx, []*store.Execution{xf, xr, other}); err != nil {
			t.Fatal(err)
		}

		out, err := e.LoseOnExecutor(ctx, "billing", dead)
		if err != nil {
			t.Fatal(err)
		}
		if want := (LossOutcome{Lost: 2, FollowUp: 1, Alarmed: 1}); out != want {
			t.Fatalf("LoseOnExecutor = %+v, want %+v", out, want)
		}
		for _, c := range []struct {
			x     *store.Execution
			state store.ExecutionState
			alarm store.AlarmState
		}{{xf, store.ExecLost, store.AlarmPending}, {xr, store.ExecLost, store.AlarmNone},
			{other, store.ExecRunning, store.AlarmNone}} {
			got, err := st.ExecutionGet(ctx, c.x.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != c.state || got.AlarmState != c.alarm {
				t.Errorf("execution %d: %s with alarm %s, want %s with alarm %s", got.ID, got.State, got.AlarmState, c.state, c.alarm)
			}
		}
		execs := (&fakeNode{t: t, st: st}).executions(retried)
		if len(execs) != 2 {
			t.Fatalf("%d executions of the retried job, want the lost one and its retry", len(execs))
		}
		r := execs[1]
		// Attempt 1 waits twice the backoff, from the moment of the loss.
		if r.Cause != store.CauseRetry || r.Attempt != 2 || r.State != store.ExecPending ||
			r.ScheduledAt != ms(t0.Add(2*time.Second)) || r.ShardIndex != 2 || r.ShardTotal != 3 || r.TriggerID != 7 {
			t.Errorf("retry %+v, want attempt 2 of shard 2/3 of trigger 7, pending at t0+2s", r)
		}

		// A second sweep of the same executor finds nothing left to lose.
		if out, err := e.LoseOnExecutor(ctx, "billing", dead); err != nil || out != (LossOutcome{}) {
			t.Errorf("second LoseOnExecutor = %+v, %v; want nothing", out, err)
		}
	})
}

// TestRetry: an ended execution is run again now as its next attempt, whatever its job's
// max_retries; a live one is refused with a StateError, and a missing one is not found.
func TestRetry(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := openStore(t, dialect)
		clk := clock.NewFake(t0)
		e := newEngine(t, st, newRecorder(), "node", clk, nil)
		job := insertJob(t, st, "job", nil)
		ended := &store.Execution{JobID: job.ID, TriggerID: 3, ScheduledAt: 1000, FiredAt: 1000, Cause: store.CauseAPI,
			State: store.ExecFailed, Attempt: 4, ShardIndex: 1, ShardTotal: 2}
		live := &store.Execution{JobID: job.ID, ScheduledAt: 2000, Cause: store.CauseAPI, State: store.ExecPending}
		if _, err := st.ExecutionsInsert(ctx, []*store.Execution{ended, live}); err != nil {
			t.Fatal(err)
		}

		r, err := e.Retry(ctx, ended.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID == 0 || r.JobID != job.ID || r.TriggerID != 3 || r.Cause != store.CauseRetry || r.Attempt != 5 ||
			r.State != store.ExecPending || r.ScheduledAt != ms(t0) || r.ShardIndex != 1 || r.ShardTotal != 2 {
			t.Errorf("retry %+v, want attempt 5 of shard 1/2 of trigger 3, pending now", r)
		}

		var se *StateError
		if _, err := e.Retry(ctx, live.ID); !errors.As(err, &se) {
			t.Errorf("retry of a pending execution: %v, want a StateError", err)
		}
		if _, err := e.Retry(ctx, r.ID+1000); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("retry of a missing execution: %v, want not found", err)
		}
	})
}
